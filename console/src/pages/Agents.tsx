/**
 * The organization's agents, 20 a page (GET /api/agents), each with a link to its chat (the chatUrl the API gives
 * it) and to its page (edit, archive); **New agent** leads to the form.
 */
import { Alert, Button, Card, Group, Loader, SimpleGrid, Stack, Text, Title } from '@mantine/core';
import { useInfiniteQuery } from '@tanstack/react-query';
import { Link } from 'react-router';
import { api, unwrap } from '../api/client';
import { chatPath } from '../lib/paths';

export function AgentsPage() {
  const agents = useInfiniteQuery({
    queryKey: ['agents', 'list'],
    initialPageParam: undefined as string | undefined,
    queryFn: async ({ pageParam }) =>
      unwrap(
        await api.GET('/api/agents', { params: { query: { limit: 20, ...(pageParam ? { cursor: pageParam } : {}) } } })
      ),
    getNextPageParam: (last) => last.next_cursor ?? undefined,
  });
  const rows = agents.data?.pages.flatMap((p) => p.agents) ?? [];
  return (
    <Stack>
      <Group justify="space-between" align="flex-end" wrap="wrap">
        <Title order={1}>Agents</Title>
        <Button component={Link} to="/agents/new">
          New agent
        </Button>
      </Group>
      {agents.isPending && <Loader aria-label="Loading agents" />}
      {agents.isError && (
        <Alert color="red" role="alert">
          {agents.error.message}
        </Alert>
      )}
      {agents.isSuccess && rows.length === 0 && <Text>No agents yet: create one with New agent.</Text>}
      <SimpleGrid cols={{ base: 1, sm: 2, lg: 3 }}>
        {rows.map((a) => (
          <Card key={a.id} withBorder>
            <Stack gap="xs">
              <Text fw={600}>{a.name}</Text>
              {a.role && (
                <Text size="sm" c="dimmed" lineClamp={3}>
                  {a.role}
                </Text>
              )}
              <Group gap="xs">
                <Button
                  component={Link}
                  to={chatPath({ organizationId: a.organization_id, spaceId: a.workspace_id, chatId: a.chat_id })}
                  variant="light"
                  aria-label={`Open chat with ${a.name}`}
                >
                  Open chat
                </Button>
                <Button
                  component={Link}
                  to={`/agents/${encodeURIComponent(a.id)}`}
                  variant="default"
                  aria-label={`Edit ${a.name}`}
                >
                  Edit
                </Button>
              </Group>
            </Stack>
          </Card>
        ))}
      </SimpleGrid>
      {agents.hasNextPage && (
        <Button variant="default" onClick={() => void agents.fetchNextPage()} loading={agents.isFetchingNextPage}>
          More agents
        </Button>
      )}
    </Stack>
  );
}
