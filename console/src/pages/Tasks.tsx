/**
 * Tasks, "my dashboard" (issue 36 point 4): the tasks assigned to me, the unassigned ones I can claim, and the
 * organization's tasks filtered by status, assignee and space (the filters of GET /api/v1/tasks). The buttons of a
 * task are its allowed next states (lib/taskStates.ts); an agent's task has **Run**, with the run's live output.
 * The lists update live through the page's one organization stream (lib/useOrganizationEvents.ts).
 */
import { Group, Select, Stack, Text, Title } from '@mantine/core';
import { useQuery } from '@tanstack/react-query';
import { useMemo, useState } from 'react';
import { api, unwrap } from '../api/client';
import { useSession } from '../api/useSession';
import { TaskCreate, type Choice } from '../components/TaskCreate';
import { TaskList } from '../components/TaskList';
import { STATUS_LABELS, TASK_STATUSES, type TaskStatus } from '../lib/taskStates';
import type { TaskFilters } from '../lib/tasks';
import { useOrganizationEvents } from '../lib/useOrganizationEvents';

const ME = 'me';

export function TasksPage() {
  const userId = useSession().data?.user.id;
  const { connection } = useOrganizationEvents(['task.'], [['tasks']]);
  const agents = useQuery({
    queryKey: ['agents', 'v1', 'first-100'],
    queryFn: async () => unwrap(await api.GET('/api/v1/agents', { params: { query: { limit: 100 } } })).agents,
  });
  const spaces = useQuery({
    queryKey: ['spaces', 'v1', 'first-100'],
    queryFn: async () => unwrap(await api.GET('/api/v1/spaces', { params: { query: { limit: 100 } } })).spaces,
  });
  const names = useMemo(() => {
    const m = new Map<string, string>();
    for (const a of agents.data ?? []) m.set(a.id, a.name);
    for (const s of spaces.data ?? []) m.set(s.id, s.name);
    return m;
  }, [agents.data, spaces.data]);
  const assigneeChoices: Choice[] = [
    ...(userId ? [{ value: userId, label: 'Me' }] : []),
    ...(agents.data ?? []).map((a) => ({ value: a.id, label: `Agent: ${a.name}` })),
  ];
  const spaceChoices: Choice[] = (spaces.data ?? []).map((s) => ({ value: s.id, label: s.name }));

  const [status, setStatus] = useState<TaskStatus | null>(null);
  const [assignee, setAssignee] = useState<string | null>(null);
  const [spaceId, setSpaceId] = useState<string | null>(null);
  const filters: TaskFilters = {
    ...(status ? { status } : {}),
    ...(assignee ? { assignedTo: assignee === ME ? userId : assignee } : {}),
    ...(spaceId ? { spaceId } : {}),
  };
  const [runs, setRuns] = useState<Record<string, string>>({});
  const onRun = (taskId: string, executionId: string) => setRuns((r) => ({ ...r, [taskId]: executionId }));
  const common = { userId, names, runs, onRun };

  return (
    <Stack>
      <Group justify="space-between" align="flex-end" wrap="wrap">
        <Title order={1}>Tasks</Title>
        <Text size="xs" c="dimmed" aria-live="polite">
          {connection === 'live' ? 'Live' : connection === 'reconnecting' ? 'Reconnecting…' : 'Connecting…'}
        </Text>
      </Group>
      <TaskCreate assignees={assigneeChoices} spaces={spaceChoices} />
      {userId && (
        <TaskList
          title="Assigned to me"
          filters={{ assignedTo: userId }}
          empty="Nothing is assigned to you."
          {...common}
        />
      )}
      <TaskList
        title="Unassigned, to claim"
        filters={{ status: 'pending', unassigned: true }}
        empty="No task waits to be claimed."
        {...common}
      />
      <Stack gap="xs">
        <Title order={2} size="h3">
          The organization’s tasks
        </Title>
        <Group wrap="wrap" align="flex-end">
          <Select
            label="Status"
            placeholder="Any"
            clearable
            data={TASK_STATUSES.map((s) => ({ value: s, label: STATUS_LABELS[s] }))}
            value={status}
            onChange={(v) => setStatus(v as TaskStatus | null)}
            w={180}
          />
          <Select
            label="Assignee"
            placeholder="Anyone"
            clearable
            data={[
              { value: ME, label: 'Me' },
              ...(agents.data ?? []).map((a) => ({ value: a.id, label: `Agent: ${a.name}` })),
            ]}
            value={assignee}
            onChange={setAssignee}
            w={220}
          />
          <Select
            label="Space filter"
            placeholder="Any space"
            clearable
            data={spaceChoices}
            value={spaceId}
            onChange={setSpaceId}
            w={220}
          />
        </Group>
      </Stack>
      <TaskList title="All tasks" filters={filters} empty="No task matches these filters." {...common} />
    </Stack>
  );
}
