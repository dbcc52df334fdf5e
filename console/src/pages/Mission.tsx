/**
 * One mission (GET /api/missions/{id}): its goal, agent, schedule with the next run times its Temporal Schedule
 * gives (in the reader's time zone), **Pause** / **Resume** (PATCH status), its tasks with start-work, and its runs.
 */
import { Alert, Anchor, Badge, Button, Group, List, Loader, Paper, Stack, Text, Title } from '@mantine/core';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useMemo } from 'react';
import { Link, useParams } from 'react-router';
import { api, unwrap } from '../api/client';
import { agentName, useAgentOptions } from '../api/options';
import { MissionRuns } from '../components/MissionRuns';
import { MissionTasks } from '../components/MissionTasks';
import { browserTimeZone, formatRun, scheduleText } from '../lib/cronPreview';

export function MissionPage() {
  const id = useParams().missionId!;
  const reader = useMemo(browserTimeZone, []);
  const queryClient = useQueryClient();
  const agents = useAgentOptions();
  const mission = useQuery({
    queryKey: ['missions', id],
    queryFn: async () => unwrap(await api.GET('/api/missions/{id}', { params: { path: { id } } })).mission,
  });
  const setStatus = useMutation({
    mutationFn: async (status: 'active' | 'paused') =>
      unwrap(await api.PATCH('/api/missions/{id}', { params: { path: { id } }, body: { status } })).mission,
    onSuccess: (m) => {
      queryClient.setQueryData(['missions', id], m);
      void queryClient.invalidateQueries({ queryKey: ['missions', 'list'] });
    },
  });
  if (mission.isPending) return <Loader aria-label="Loading the mission" />;
  if (mission.isError)
    return (
      <Stack>
        <Title order={1}>Mission</Title>
        <Alert color="red" role="alert">
          {mission.error.message}
        </Alert>
      </Stack>
    );
  const m = mission.data;
  const paused = m.status === 'paused';
  return (
    <Stack>
      <Group justify="space-between" align="flex-end" wrap="wrap">
        <Title order={1} style={{ overflowWrap: 'anywhere' }}>
          {m.title}
        </Title>
        <Group gap="xs">
          <Badge color={paused ? 'gray' : 'green'} variant="light" role="status" aria-label={`Status: ${m.status}`}>
            {m.status}
          </Badge>
          <Button
            variant="light"
            onClick={() => setStatus.mutate(paused ? 'active' : 'paused')}
            loading={setStatus.isPending}
          >
            {paused ? 'Resume' : 'Pause'}
          </Button>
        </Group>
      </Group>
      {setStatus.isError && (
        <Alert color="red" role="alert">
          {setStatus.error.message}
        </Alert>
      )}
      <Paper withBorder p="sm">
        <Stack gap="xs">
          <Text size="xs" c="dimmed">
            Goal
          </Text>
          <div className="turn-user">{m.goal}</div>
          <Group gap="md" wrap="wrap">
            <Text size="sm">
              Agent:{' '}
              <Anchor component={Link} to={`/agents/${encodeURIComponent(m.agentId)}`}>
                {agentName(agents.data, m.agentId)}
              </Anchor>
            </Text>
            <Text size="sm">
              Schedule: <span style={{ fontFamily: 'monospace' }}>{scheduleText(m.schedule, reader)}</span>
            </Text>
            <Text size="sm">Last run: {m.lastRunAt ? formatRun(new Date(m.lastRunAt), reader) : 'never'}</Text>
          </Group>
          {m.nextRunTimes && m.nextRunTimes.length > 0 ? (
            <div role="region" aria-label="Next runs">
              <Text size="sm" fw={600}>
                Next runs, in your time zone ({reader})
              </Text>
              <List size="sm">
                {m.nextRunTimes.map((t) => (
                  <List.Item key={t}>{formatRun(new Date(t), reader)}</List.Item>
                ))}
              </List>
            </div>
          ) : (
            <Text size="sm" c="dimmed">
              {paused ? 'Paused: no runs until it is resumed.' : 'No scheduled runs.'}
            </Text>
          )}
        </Stack>
      </Paper>
      <MissionTasks missionId={m.id} />
      <MissionRuns missionId={m.id} />
    </Stack>
  );
}
