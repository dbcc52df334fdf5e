/**
 * A mission's run history: its jobs (one per run), 20 a page (GET /api/jobs?mission_id=), and a bar chart of the
 * loaded runs per day, by outcome, in the reader's time zone (recharts).
 */
import { Alert, Anchor, Badge, Button, Loader, Stack, Table, Text, Title } from '@mantine/core';
import { useInfiniteQuery } from '@tanstack/react-query';
import { useMemo } from 'react';
import { Link } from 'react-router';
import { Bar, BarChart, CartesianGrid, Legend, ResponsiveContainer, Tooltip, XAxis, YAxis } from 'recharts';
import { api, unwrap } from '../api/client';
import { browserTimeZone } from '../lib/cronPreview';
import { runOutcome, runsPerDay } from '../lib/runHistory';

const outcomeColor = { completed: 'green', failed: 'red', open: 'blue' } as const;

export function MissionRuns({ missionId }: { missionId: string }) {
  const reader = useMemo(browserTimeZone, []);
  const jobs = useInfiniteQuery({
    queryKey: ['jobs', { missionId }],
    initialPageParam: undefined as string | undefined,
    queryFn: async ({ pageParam }) =>
      unwrap(
        await api.GET('/api/jobs', {
          params: { query: { limit: 20, mission_id: missionId, ...(pageParam ? { cursor: pageParam } : {}) } },
        })
      ),
    getNextPageParam: (last) => last.next_cursor ?? undefined,
  });
  const rows = useMemo(() => jobs.data?.pages.flatMap((p) => p.jobs) ?? [], [jobs.data]);
  const days = useMemo(() => runsPerDay(rows, reader), [rows, reader]);
  return (
    <Stack>
      <Title order={2} size="h3">
        Runs
      </Title>
      {jobs.isPending && <Loader aria-label="Loading runs" />}
      {jobs.isError && (
        <Alert color="red" role="alert">
          {jobs.error.message}
        </Alert>
      )}
      {jobs.isSuccess && rows.length === 0 && <Text size="sm">No runs yet.</Text>}
      {days.length > 0 && (
        <figure style={{ margin: 0 }} aria-label="Runs per day by outcome">
          <div style={{ width: '100%', height: 220 }}>
            <ResponsiveContainer>
              <BarChart data={days} margin={{ top: 8, right: 8, bottom: 8, left: -16 }}>
                <CartesianGrid strokeDasharray="3 3" vertical={false} />
                <XAxis dataKey="day" fontSize={12} />
                <YAxis allowDecimals={false} fontSize={12} />
                <Tooltip />
                <Legend />
                <Bar dataKey="completed" name="completed" stackId="runs" fill="var(--mantine-color-green-6)" />
                <Bar dataKey="failed" name="failed or cancelled" stackId="runs" fill="var(--mantine-color-red-6)" />
                <Bar dataKey="open" name="in progress" stackId="runs" fill="var(--mantine-color-blue-5)" />
              </BarChart>
            </ResponsiveContainer>
          </div>
          <Text component="figcaption" size="xs" c="dimmed">
            Runs per day ({reader}) of the {rows.length} run{rows.length === 1 ? '' : 's'} listed below.
          </Text>
        </figure>
      )}
      {rows.length > 0 && (
        <Table.ScrollContainer minWidth={300}>
          <Table striped>
            <Table.Thead>
              <Table.Tr>
                <Table.Th>Run</Table.Th>
                <Table.Th>Status</Table.Th>
                <Table.Th visibleFrom="sm">Started</Table.Th>
              </Table.Tr>
            </Table.Thead>
            <Table.Tbody>
              {rows.map((j) => (
                <Table.Tr key={j.id}>
                  <Table.Td>
                    <Anchor component={Link} to={`/jobs/${encodeURIComponent(j.id)}`}>
                      {j.title}
                    </Anchor>
                  </Table.Td>
                  <Table.Td>
                    <Badge color={outcomeColor[runOutcome(j.status)]} variant="light">
                      {j.status.replace('_', ' ')}
                    </Badge>
                  </Table.Td>
                  <Table.Td visibleFrom="sm">
                    <Text size="sm">{j.created_at ? new Date(j.created_at).toLocaleString() : '—'}</Text>
                  </Table.Td>
                </Table.Tr>
              ))}
            </Table.Tbody>
          </Table>
        </Table.ScrollContainer>
      )}
      {jobs.hasNextPage && (
        <Button variant="default" onClick={() => void jobs.fetchNextPage()} loading={jobs.isFetchingNextPage}>
          More runs
        </Button>
      )}
    </Stack>
  );
}
