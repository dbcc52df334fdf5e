/**
 * The organization's missions, newest first, 20 a page (GET /api/missions), with their schedule and status; **New
 * mission** opens the form (POST /api/missions), which previews a cron schedule's next runs.
 */
import { Alert, Anchor, Badge, Button, Group, Loader, Paper, Stack, Table, Text, Title } from '@mantine/core';
import { useInfiniteQuery, useMutation, useQueryClient } from '@tanstack/react-query';
import { useMemo, useState } from 'react';
import { Link, useNavigate } from 'react-router';
import { api, unwrap } from '../api/client';
import { MissionForm, type MissionFields } from '../components/MissionForm';
import { browserTimeZone, scheduleText } from '../lib/cronPreview';

export function MissionsPage() {
  const [creating, setCreating] = useState(false);
  const reader = useMemo(browserTimeZone, []);
  const navigate = useNavigate();
  const queryClient = useQueryClient();
  const missions = useInfiniteQuery({
    queryKey: ['missions', 'list'],
    initialPageParam: undefined as string | undefined,
    queryFn: async ({ pageParam }) =>
      unwrap(
        await api.GET('/api/missions', {
          params: { query: { limit: 20, ...(pageParam ? { cursor: pageParam } : {}) } },
        })
      ),
    getNextPageParam: (last) => last.next_cursor ?? undefined,
  });
  const create = useMutation({
    mutationFn: async (f: MissionFields) => unwrap(await api.POST('/api/missions', { body: f })),
    onSuccess: (data) => {
      void queryClient.invalidateQueries({ queryKey: ['missions'] });
      void navigate(`/missions/${encodeURIComponent(data.mission.id)}`);
    },
  });
  const rows = missions.data?.pages.flatMap((p) => p.missions) ?? [];
  return (
    <Stack>
      <Group justify="space-between" align="flex-end" wrap="wrap">
        <Title order={1}>Missions</Title>
        {!creating && <Button onClick={() => setCreating(true)}>New mission</Button>}
      </Group>
      {creating && (
        <Paper withBorder p="md">
          <Stack>
            <Group justify="space-between">
              <Title order={2} size="h3">
                New mission
              </Title>
              <Button variant="subtle" onClick={() => setCreating(false)}>
                Close
              </Button>
            </Group>
            <MissionForm
              saving={create.isPending}
              error={create.error?.message ?? null}
              onSubmit={(f) => create.mutate(f)}
            />
          </Stack>
        </Paper>
      )}
      {missions.isPending && <Loader aria-label="Loading missions" />}
      {missions.isError && (
        <Alert color="red" role="alert">
          {missions.error.message}
        </Alert>
      )}
      {missions.isSuccess && rows.length === 0 && <Text>No missions yet: create one with New mission.</Text>}
      {rows.length > 0 && (
        <Table.ScrollContainer minWidth={320}>
          <Table striped highlightOnHover>
            <Table.Thead>
              <Table.Tr>
                <Table.Th>Mission</Table.Th>
                <Table.Th>Status</Table.Th>
                <Table.Th visibleFrom="sm">Schedule</Table.Th>
                <Table.Th visibleFrom="sm">Last run</Table.Th>
              </Table.Tr>
            </Table.Thead>
            <Table.Tbody>
              {rows.map((m) => (
                <Table.Tr key={m.id}>
                  <Table.Td>
                    <Anchor component={Link} to={`/missions/${encodeURIComponent(m.id)}`}>
                      {m.title}
                    </Anchor>
                  </Table.Td>
                  <Table.Td>
                    <Badge color={m.status === 'active' ? 'green' : 'gray'} variant="light">
                      {m.status}
                    </Badge>
                  </Table.Td>
                  <Table.Td visibleFrom="sm">
                    <Text size="sm" ff="monospace">
                      {scheduleText(m.schedule, reader)}
                    </Text>
                  </Table.Td>
                  <Table.Td visibleFrom="sm">
                    <Text size="sm">{m.lastRunAt ? new Date(m.lastRunAt).toLocaleString() : '—'}</Text>
                  </Table.Td>
                </Table.Tr>
              ))}
            </Table.Tbody>
          </Table>
        </Table.ScrollContainer>
      )}
      {missions.hasNextPage && (
        <Button variant="default" onClick={() => void missions.fetchNextPage()} loading={missions.isFetchingNextPage}>
          More missions
        </Button>
      )}
    </Stack>
  );
}
