/**
 * Executions of the organization, newest first, 20 a page (GET /api/v1/executions), filtered by agent and status
 * (kept in the address: `?agentId=`, `?status=`), each with its status, start, end and tokens.
 */
import { Alert, Anchor, Button, Group, Loader, Select, Stack, Table, Text, Title } from '@mantine/core';
import { useInfiniteQuery } from '@tanstack/react-query';
import { Link, useSearchParams } from 'react-router';
import { api, unwrap } from '../api/client';
import { agentName, useAgentOptions } from '../api/options';
import { ExecutionStatus, tokens, when } from '../components/ExecutionParts';

const STATUSES = ['pending', 'running', 'completed', 'failed', 'cancelled'] as const;
type Status = (typeof STATUSES)[number];

export function ExecutionsPage() {
  const [params, setParams] = useSearchParams();
  const agentId = params.get('agentId') || null;
  const statusParam = params.get('status');
  const status = STATUSES.includes(statusParam as Status) ? (statusParam as Status) : null;
  const agents = useAgentOptions();
  const executions = useInfiniteQuery({
    queryKey: ['executions', { agentId, status }],
    initialPageParam: undefined as string | undefined,
    queryFn: async ({ pageParam }) =>
      unwrap(
        await api.GET('/api/v1/executions', {
          params: {
            query: {
              limit: 20,
              ...(agentId ? { agentId } : {}),
              ...(status ? { status } : {}),
              ...(pageParam ? { cursor: pageParam } : {}),
            },
          },
        })
      ),
    getNextPageParam: (last) => last.nextCursor ?? undefined,
  });
  const filter = (key: string, value: string | null) =>
    setParams(
      (prev) => {
        const next = new URLSearchParams(prev);
        if (value) next.set(key, value);
        else next.delete(key);
        return next;
      },
      { replace: true }
    );
  const rows = executions.data?.pages.flatMap((p) => p.executions) ?? [];
  return (
    <Stack>
      <Group justify="space-between" align="flex-end" wrap="wrap">
        <Title order={1}>Executions</Title>
        <Group align="flex-end" wrap="wrap">
          <Select
            label="Agent"
            placeholder="Any agent"
            clearable
            searchable
            data={agents.data ?? []}
            value={agentId}
            onChange={(v) => filter('agentId', v)}
            w={220}
          />
          <Select
            label="Status"
            placeholder="Any"
            clearable
            data={[...STATUSES]}
            value={status}
            onChange={(v) => filter('status', v)}
            w={160}
          />
        </Group>
      </Group>
      {executions.isPending && <Loader aria-label="Loading executions" />}
      {executions.isError && (
        <Alert color="red" role="alert">
          {executions.error.message}
        </Alert>
      )}
      {executions.isSuccess && rows.length === 0 && <Text>No executions yet.</Text>}
      {rows.length > 0 && (
        <Table.ScrollContainer minWidth={320}>
          <Table striped highlightOnHover>
            <Table.Thead>
              <Table.Tr>
                <Table.Th>Execution</Table.Th>
                <Table.Th>Status</Table.Th>
                <Table.Th visibleFrom="sm">Started</Table.Th>
                <Table.Th visibleFrom="sm">Ended</Table.Th>
                <Table.Th visibleFrom="sm">Tokens</Table.Th>
              </Table.Tr>
            </Table.Thead>
            <Table.Tbody>
              {rows.map((e) => (
                <Table.Tr key={e.id}>
                  <Table.Td>
                    <Anchor component={Link} to={`/executions/${encodeURIComponent(e.id)}`}>
                      {agentName(agents.data, e.agentId)}
                    </Anchor>
                    <Text size="xs" c="dimmed" lineClamp={1}>
                      {e.input.message}
                    </Text>
                  </Table.Td>
                  <Table.Td>
                    <ExecutionStatus status={e.status} />
                  </Table.Td>
                  <Table.Td visibleFrom="sm">
                    <Text size="sm">{when(e.startedAt ?? e.createdAt)}</Text>
                  </Table.Td>
                  <Table.Td visibleFrom="sm">
                    <Text size="sm">{when(e.completedAt)}</Text>
                  </Table.Td>
                  <Table.Td visibleFrom="sm">
                    <Text size="sm">{tokens(e.usage)}</Text>
                  </Table.Td>
                </Table.Tr>
              ))}
            </Table.Tbody>
          </Table>
        </Table.ScrollContainer>
      )}
      {executions.hasNextPage && (
        <Button
          variant="default"
          onClick={() => void executions.fetchNextPage()}
          loading={executions.isFetchingNextPage}
        >
          More executions
        </Button>
      )}
    </Stack>
  );
}
