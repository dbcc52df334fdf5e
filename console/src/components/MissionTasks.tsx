/**
 * A mission's tasks, 20 a page (GET /api/v1/tasks?missionId=), each with **Start work** (POST
 * /api/missions/{id}/tasks/{taskId}/start-work: a job for it, linked here), and a form to add one (POST
 * /api/missions/{id}/tasks).
 */
import { Alert, Anchor, Badge, Button, Group, Loader, Paper, Stack, Text, TextInput, Title } from '@mantine/core';
import { useInfiniteQuery, useMutation, useQueryClient } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import { Link } from 'react-router';
import { api, unwrap } from '../api/client';

const OPEN = new Set(['pending', 'in_progress']);

function StartWork({ missionId, taskId, title }: { missionId: string; taskId: string; title: string }) {
  const queryClient = useQueryClient();
  const start = useMutation({
    mutationFn: async () =>
      unwrap(
        await api.POST('/api/missions/{id}/tasks/{taskId}/start-work', {
          params: { path: { id: missionId, taskId } },
        })
      ),
    onSuccess: () => {
      void queryClient.invalidateQueries({ queryKey: ['tasks'] });
      void queryClient.invalidateQueries({ queryKey: ['jobs'] });
    },
  });
  return (
    <Group gap="xs" wrap="wrap">
      {start.data ? (
        <Anchor component={Link} to={`/jobs/${encodeURIComponent(start.data.jobId)}`}>
          Job started: {start.data.job.title}
        </Anchor>
      ) : (
        <Button
          size="compact-sm"
          variant="light"
          onClick={() => start.mutate()}
          loading={start.isPending}
          aria-label={`Start work on ${title}`}
        >
          Start work
        </Button>
      )}
      {start.isError && (
        <Text c="red" size="sm" role="alert">
          {start.error.message}
        </Text>
      )}
    </Group>
  );
}

export function MissionTasks({ missionId }: { missionId: string }) {
  const queryClient = useQueryClient();
  const [title, setTitle] = useState('');
  const [description, setDescription] = useState('');
  const tasks = useInfiniteQuery({
    queryKey: ['tasks', { missionId }],
    initialPageParam: undefined as string | undefined,
    queryFn: async ({ pageParam }) =>
      unwrap(
        await api.GET('/api/v1/tasks', {
          params: { query: { limit: 20, missionId, ...(pageParam ? { cursor: pageParam } : {}) } },
        })
      ),
    getNextPageParam: (last) => last.nextCursor ?? undefined,
  });
  const add = useMutation({
    mutationFn: async () =>
      unwrap(
        await api.POST('/api/missions/{id}/tasks', {
          params: { path: { id: missionId } },
          body: { title, ...(description.trim() ? { description } : {}) },
        })
      ),
    onSuccess: () => {
      setTitle('');
      setDescription('');
      void queryClient.invalidateQueries({ queryKey: ['tasks'] });
    },
  });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    add.mutate();
  };
  const rows = tasks.data?.pages.flatMap((p) => p.tasks) ?? [];
  return (
    <Stack>
      <Title order={2} size="h3">
        Tasks
      </Title>
      {tasks.isPending && <Loader aria-label="Loading tasks" />}
      {tasks.isError && (
        <Alert color="red" role="alert">
          {tasks.error.message}
        </Alert>
      )}
      {tasks.isSuccess && rows.length === 0 && <Text size="sm">No tasks yet.</Text>}
      {rows.length > 0 && (
        <Stack gap="xs" component="ul" p={0} m={0} style={{ listStyle: 'none' }} aria-label="Mission tasks">
          {rows.map((t) => (
            <Paper component="li" key={t.id} withBorder p="xs">
              <Group justify="space-between" wrap="wrap" gap="xs">
                <div style={{ minWidth: 0 }}>
                  <Text fw={600} style={{ overflowWrap: 'anywhere' }}>
                    {t.title}
                  </Text>
                  {t.description && (
                    <Text size="sm" c="dimmed" lineClamp={2} style={{ overflowWrap: 'anywhere' }}>
                      {t.description}
                    </Text>
                  )}
                </div>
                <Group gap="xs" wrap="wrap">
                  <Badge variant="light">{t.status.replace('_', ' ')}</Badge>
                  {OPEN.has(t.status) && <StartWork missionId={missionId} taskId={t.id} title={t.title} />}
                </Group>
              </Group>
            </Paper>
          ))}
        </Stack>
      )}
      {tasks.hasNextPage && (
        <Button variant="default" onClick={() => void tasks.fetchNextPage()} loading={tasks.isFetchingNextPage}>
          More tasks
        </Button>
      )}
      <form onSubmit={submit} aria-label="Add a task" noValidate>
        <Group align="flex-end" wrap="wrap">
          <TextInput label="New task" value={title} onChange={(e) => setTitle(e.currentTarget.value)} miw={200} />
          <TextInput
            label="Description"
            value={description}
            onChange={(e) => setDescription(e.currentTarget.value)}
            miw={200}
          />
          <Button type="submit" variant="light" loading={add.isPending}>
            Add task
          </Button>
        </Group>
        {add.isError && (
          <Alert color="red" role="alert" mt="xs">
            {add.error.message}
          </Alert>
        )}
      </form>
    </Stack>
  );
}
