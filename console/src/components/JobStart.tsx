/**
 * The inbox's **Start a job** form: an agent works toward a goal in a workspace, in iterations a person reviews
 * (POST /api/jobs). On success the page opens the new job.
 */
import { Alert, Button, Group, Paper, Select, Stack, Textarea, TextInput, Title } from '@mantine/core';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import { useNavigate } from 'react-router';
import { api, unwrap } from '../api/client';
import { useAgentOptions } from '../api/options';

export function JobStart() {
  const queryClient = useQueryClient();
  const navigate = useNavigate();
  const agents = useAgentOptions();
  const spaces = useQuery({
    queryKey: ['spaces', 'v1', 'first-100'],
    queryFn: async () => unwrap(await api.GET('/api/v1/spaces', { params: { query: { limit: 100 } } })).spaces,
  });
  const [agentId, setAgentId] = useState<string | null>(null);
  const [workspaceId, setWorkspaceId] = useState<string | null>(null);
  const [title, setTitle] = useState('');
  const [goal, setGoal] = useState('');
  const start = useMutation({
    mutationFn: async () =>
      unwrap(
        await api.POST('/api/jobs', {
          body: {
            agent_id: agentId!,
            goal,
            ...(workspaceId ? { workspace_id: workspaceId } : {}),
            ...(title.trim() ? { title: title.trim() } : {}),
          },
        })
      ).job,
    onSuccess: async (job) => {
      await queryClient.invalidateQueries({ queryKey: ['jobs'] });
      await navigate(`/jobs/${encodeURIComponent(job.id)}`);
    },
  });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    if (agentId && goal.trim()) start.mutate();
  };
  return (
    <Paper withBorder p="sm" component="section" aria-labelledby="start-job">
      <form onSubmit={submit}>
        <Stack gap="xs">
          <Title order={2} size="h3" id="start-job">
            Start a job
          </Title>
          <Group grow wrap="wrap" align="flex-start">
            <Select label="Agent" required searchable data={agents.data ?? []} value={agentId} onChange={setAgentId} />
            <Select
              label="Workspace"
              placeholder="Your active workspace"
              clearable
              data={(spaces.data ?? []).map((s) => ({ value: s.id, label: s.name }))}
              value={workspaceId}
              onChange={setWorkspaceId}
            />
          </Group>
          <TextInput
            label="Title"
            placeholder="The start of the goal"
            value={title}
            onChange={(e) => setTitle(e.currentTarget.value)}
          />
          <Textarea
            label="Goal"
            required
            autosize
            minRows={2}
            value={goal}
            onChange={(e) => setGoal(e.currentTarget.value)}
          />
          {start.isError && (
            <Alert color="red" role="alert">
              {start.error.message}
            </Alert>
          )}
          <Group>
            <Button type="submit" loading={start.isPending} disabled={!agentId || !goal.trim()}>
              Start job
            </Button>
          </Group>
        </Stack>
      </form>
    </Paper>
  );
}
