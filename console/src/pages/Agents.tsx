/** The organization's agents, each with a link to its chat (the chatUrl the API gives it). */
import { Alert, Button, Card, Group, Loader, SimpleGrid, Stack, Text, Title } from '@mantine/core';
import { useQuery } from '@tanstack/react-query';
import { Link } from 'react-router';
import { api, unwrap } from '../api/client';
import { chatPath } from '../lib/paths';

export function AgentsPage() {
  const agents = useQuery({
    queryKey: ['agents'],
    queryFn: async () => unwrap(await api.GET('/api/agents', { params: { query: { limit: 100 } } })),
  });
  return (
    <Stack>
      <Title order={1}>Agents</Title>
      {agents.isPending && <Loader aria-label="Loading agents" />}
      {agents.isError && (
        <Alert color="red" role="alert">
          {agents.error.message}
        </Alert>
      )}
      {agents.isSuccess && agents.data.agents.length === 0 && <Text>No agents yet.</Text>}
      <SimpleGrid cols={{ base: 1, sm: 2, lg: 3 }}>
        {agents.data?.agents.map((a) => (
          <Card key={a.id} withBorder>
            <Stack gap="xs">
              <Text fw={600}>{a.name}</Text>
              {a.role && (
                <Text size="sm" c="dimmed" lineClamp={3}>
                  {a.role}
                </Text>
              )}
              <Group>
                <Button
                  component={Link}
                  to={chatPath({ organizationId: a.organization_id, spaceId: a.workspace_id, chatId: a.chat_id })}
                  variant="light"
                  aria-label={`Open chat with ${a.name}`}
                >
                  Open chat
                </Button>
              </Group>
            </Stack>
          </Card>
        ))}
      </SimpleGrid>
    </Stack>
  );
}
