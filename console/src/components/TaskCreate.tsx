/** The Tasks page's **Create task** form: title, description, assignee (me, an agent, or nobody), space. */
import { Alert, Button, Group, Paper, Select, Stack, Textarea, TextInput, Title } from '@mantine/core';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import { api, unwrap } from '../api/client';

export interface Choice {
  value: string;
  label: string;
}

export function TaskCreate({ assignees, spaces }: { assignees: Choice[]; spaces: Choice[] }) {
  const queryClient = useQueryClient();
  const [title, setTitle] = useState('');
  const [description, setDescription] = useState('');
  const [assignTo, setAssignTo] = useState<string | null>(null);
  const [spaceId, setSpaceId] = useState<string | null>(null);
  const create = useMutation({
    mutationFn: async () =>
      unwrap(
        await api.POST('/api/v1/tasks', {
          body: {
            title: title.trim(),
            ...(description.trim() ? { description } : {}),
            ...(assignTo ? { assignTo } : {}),
            ...(spaceId ? { spaceId } : {}),
          },
        })
      ),
    onSuccess: () => {
      setTitle('');
      setDescription('');
      return queryClient.invalidateQueries({ queryKey: ['tasks'] });
    },
  });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    if (title.trim()) create.mutate();
  };
  return (
    <Paper withBorder p="sm" component="section" aria-labelledby="create-task">
      <form onSubmit={submit}>
        <Stack gap="xs">
          <Title order={2} size="h3" id="create-task">
            Create a task
          </Title>
          <TextInput label="Title" required value={title} onChange={(e) => setTitle(e.currentTarget.value)} />
          <Textarea
            label="Description"
            autosize
            minRows={2}
            value={description}
            onChange={(e) => setDescription(e.currentTarget.value)}
          />
          <Group grow wrap="wrap" align="flex-start">
            <Select
              label="Assign to"
              placeholder="Nobody (claimable)"
              clearable
              data={assignees}
              value={assignTo}
              onChange={setAssignTo}
              miw={180}
            />
            <Select
              label="Space"
              placeholder="None"
              clearable
              data={spaces}
              value={spaceId}
              onChange={setSpaceId}
              miw={180}
            />
          </Group>
          {create.isError && (
            <Alert color="red" role="alert">
              {create.error.message}
            </Alert>
          )}
          <Group>
            <Button type="submit" loading={create.isPending} disabled={!title.trim()}>
              Create task
            </Button>
          </Group>
        </Stack>
      </form>
    </Paper>
  );
}
