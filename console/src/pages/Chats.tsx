/**
 * The organization's open chats, newest first, with their status; each leads to its chat page (its chatUrl). Statuses
 * update live through the page's one organization stream (lib/useOrganizationEvents.ts).
 */
import { Alert, Anchor, Button, Group, Loader, Select, Stack, Table, Text, Title } from '@mantine/core';
import { useInfiniteQuery } from '@tanstack/react-query';
import { useState } from 'react';
import { Link } from 'react-router';
import { api, unwrap } from '../api/client';
import { StatusBadge } from '../components/StatusBadge';
import { chatPath } from '../lib/paths';
import { useOrganizationEvents } from '../lib/useOrganizationEvents';

const STATUSES = ['standby', 'working', 'done', 'needs_attention', 'error'] as const;
type Status = (typeof STATUSES)[number];

export function ChatsPage() {
  const [status, setStatus] = useState<Status | null>(null);
  useOrganizationEvents(['chat.'], [['chats']]);
  const chats = useInfiniteQuery({
    queryKey: ['chats', status],
    initialPageParam: undefined as string | undefined,
    queryFn: async ({ pageParam }) =>
      unwrap(
        await api.GET('/api/chats', {
          params: { query: { limit: 20, ...(status ? { status } : {}), ...(pageParam ? { cursor: pageParam } : {}) } },
        })
      ),
    getNextPageParam: (last) => last.next_cursor ?? undefined,
  });
  const rows = chats.data?.pages.flatMap((p) => p.chats) ?? [];
  return (
    <Stack>
      <Group justify="space-between" align="flex-end" wrap="wrap">
        <Title order={1}>Chats</Title>
        <Select
          label="Status"
          placeholder="Any"
          clearable
          data={STATUSES.map((s) => ({ value: s, label: s.replace('_', ' ') }))}
          value={status}
          onChange={(v) => setStatus(v as Status | null)}
          w={200}
        />
      </Group>
      {chats.isPending && <Loader aria-label="Loading chats" />}
      {chats.isError && (
        <Alert color="red" role="alert">
          {chats.error.message}
        </Alert>
      )}
      {chats.isSuccess && rows.length === 0 && <Text>No chats yet: open an agent’s chat under Agents.</Text>}
      {rows.length > 0 && (
        <Table.ScrollContainer minWidth={320}>
          <Table striped highlightOnHover>
            <Table.Thead>
              <Table.Tr>
                <Table.Th>Chat</Table.Th>
                <Table.Th>Status</Table.Th>
                <Table.Th visibleFrom="sm">Last message</Table.Th>
                <Table.Th visibleFrom="sm">Updated</Table.Th>
              </Table.Tr>
            </Table.Thead>
            <Table.Tbody>
              {rows.map((c) => (
                <Table.Tr key={c.id}>
                  <Table.Td>
                    <Anchor
                      component={Link}
                      to={chatPath({ organizationId: c.organization_id, spaceId: c.workspace_id, chatId: c.id })}
                    >
                      {c.title}
                    </Anchor>
                  </Table.Td>
                  <Table.Td>
                    <StatusBadge status={c.status} />
                  </Table.Td>
                  <Table.Td visibleFrom="sm">
                    <Text size="sm" lineClamp={1}>
                      {c.last_message ?? ''}
                    </Text>
                  </Table.Td>
                  <Table.Td visibleFrom="sm">
                    <Text size="sm">{new Date(c.updated_at).toLocaleString()}</Text>
                  </Table.Td>
                </Table.Tr>
              ))}
            </Table.Tbody>
          </Table>
        </Table.ScrollContainer>
      )}
      {chats.hasNextPage && (
        <Button variant="default" onClick={() => void chats.fetchNextPage()} loading={chats.isFetchingNextPage}>
          More chats
        </Button>
      )}
    </Stack>
  );
}
