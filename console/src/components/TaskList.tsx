/**
 * One list of the Tasks page: 20 tasks a page (as the API pages them), each with its status, assignee and space,
 * and only the moves its state allows (lib/taskStates.ts), **Claim** when it is unassigned, **Run** when an agent
 * has it (with the run's live output, components/TaskRun.tsx).
 */
import { Alert, Badge, Button, Card, Group, Loader, Stack, Text, Title } from '@mantine/core';
import { useInfiniteQuery, useMutation, useQueryClient } from '@tanstack/react-query';
import { api, unwrap } from '../api/client';
import { canClaim, canRun, nextMoves, STATUS_LABELS, type TaskStatus } from '../lib/taskStates';
import { fetchTasks, type Task, type TaskFilters } from '../lib/tasks';
import { TaskRun } from './TaskRun';

const statusColors: Record<string, string> = {
  pending: 'gray',
  in_progress: 'blue',
  completed: 'green',
  cancelled: 'red',
};

export interface TaskListProps {
  title: string;
  filters: TaskFilters;
  empty: string;
  userId: string | undefined;
  /** Names of agents and spaces by id, for display. */
  names: Map<string, string>;
  /** The runs started from this page, by task id (kept by the page: a running task may move to another list). */
  runs: Record<string, string>;
  onRun: (taskId: string, executionId: string) => void;
}

export function TaskList({ title, filters, empty, userId, names, runs, onRun }: TaskListProps) {
  const tasks = useInfiniteQuery({
    queryKey: ['tasks', filters],
    initialPageParam: undefined as string | undefined,
    queryFn: ({ pageParam }) => fetchTasks(filters, pageParam),
    getNextPageParam: (last) => last.nextCursor ?? undefined,
  });
  const rows = tasks.data?.pages.flatMap((p) => p.tasks) ?? [];
  const headingId = `tasks-${title.toLowerCase().replace(/[^a-z]+/g, '-')}`;
  return (
    <Stack gap="xs" component="section" aria-labelledby={headingId}>
      <Title order={2} id={headingId} size="h3">
        {title}
      </Title>
      {tasks.isPending && <Loader aria-label={`Loading ${title}`} size="sm" />}
      {tasks.isError && (
        <Alert color="red" role="alert">
          {tasks.error.message}
        </Alert>
      )}
      {tasks.isSuccess && rows.length === 0 && <Text c="dimmed">{empty}</Text>}
      {rows.map((t) => (
        <TaskCard key={t.id} task={t} userId={userId} names={names} executionId={runs[t.id]} onRun={onRun} />
      ))}
      {tasks.hasNextPage && (
        <Button
          variant="default"
          onClick={() => void tasks.fetchNextPage()}
          loading={tasks.isFetchingNextPage}
          aria-label={`More: ${title}`}
        >
          More tasks
        </Button>
      )}
    </Stack>
  );
}

interface TaskCardProps {
  task: Task;
  userId: string | undefined;
  names: Map<string, string>;
  executionId: string | undefined;
  onRun: (taskId: string, executionId: string) => void;
}

function TaskCard({ task, userId, names, executionId, onRun }: TaskCardProps) {
  const queryClient = useQueryClient();
  const done = () => queryClient.invalidateQueries({ queryKey: ['tasks'] });
  const change = useMutation({
    mutationFn: async (body: { status?: TaskStatus; assignTo?: string }) =>
      unwrap(await api.PATCH('/api/v1/tasks/{id}', { params: { path: { id: task.id } }, body })),
    onSuccess: done,
  });
  const run = useMutation({
    mutationFn: async () => unwrap(await api.POST('/api/v1/tasks/{id}/run', { params: { path: { id: task.id } } })),
    onSuccess: (r) => {
      onRun(task.id, r.executionId);
      return done();
    },
  });
  const assignee = task.assignedTo
    ? task.assignedTo === userId
      ? 'me'
      : (names.get(task.assignedTo) ?? task.assignedTo)
    : 'unassigned';
  const error = change.error ?? run.error;
  return (
    <Card withBorder padding="sm" data-testid="task" data-task-id={task.id}>
      <Stack gap={6}>
        <Group justify="space-between" gap="xs" wrap="wrap">
          <Text fw={600}>{task.title}</Text>
          <Badge color={statusColors[task.status] ?? 'gray'} variant="light" data-testid="task-status">
            {STATUS_LABELS[task.status as TaskStatus] ?? task.status}
          </Badge>
        </Group>
        {task.description && (
          <Text size="sm" lineClamp={3} style={{ whiteSpace: 'pre-wrap' }}>
            {task.description}
          </Text>
        )}
        <Text size="xs" c="dimmed">
          {task.assigneeType === 'agent' ? 'Agent' : 'Assignee'}: {assignee}
          {task.spaceId ? ` · Space: ${names.get(task.spaceId) ?? task.spaceId}` : ''} · {task.priority}
        </Text>
        <Group gap="xs" wrap="wrap" role="group" aria-label={`Actions for ${task.title}`}>
          {nextMoves(task.status).map((m) => (
            <Button
              key={m.to}
              size="xs"
              variant={m.to === 'cancelled' ? 'default' : 'light'}
              loading={change.isPending && change.variables?.status === m.to}
              onClick={() => change.mutate({ status: m.to })}
            >
              {m.label}
            </Button>
          ))}
          {canClaim(task, userId) && (
            <Button
              size="xs"
              loading={change.isPending && change.variables?.assignTo !== undefined}
              onClick={() => change.mutate({ assignTo: userId! })}
            >
              Claim
            </Button>
          )}
          {canRun(task) && (
            <Button size="xs" color="teal" loading={run.isPending} onClick={() => run.mutate()}>
              Run
            </Button>
          )}
        </Group>
        {error && (
          <Alert color="red" role="alert">
            {error.message}
          </Alert>
        )}
        {executionId && <TaskRun executionId={executionId} />}
      </Stack>
    </Card>
  );
}
