/**
 * Settings › Webhook › Delivery log (GET /api/messaging-integration/deliveries, newest first): 20 at a time (the
 * API takes a `limit` up to 100 and no cursor: **More deliveries** asks for 20 more), each with its latest attempt
 * and **Redeliver**. The log refreshes itself while a delivery is pending.
 */
import { Alert, Badge, Button, Group, Loader, Stack, Table, Text, Title } from '@mantine/core';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { api, unwrap } from '../api/client';

const PAGE = 20;
const MAX = 100;
const color = (status: string) => (status === 'delivered' ? 'green' : status === 'pending' ? 'blue' : 'red');

export function WebhookDeliveries() {
  const queryClient = useQueryClient();
  const [limit, setLimit] = useState(PAGE);
  const deliveries = useQuery({
    queryKey: ['webhook-deliveries', limit],
    queryFn: async () =>
      unwrap(await api.GET('/api/messaging-integration/deliveries', { params: { query: { limit } } })),
    refetchInterval: (q) => (q.state.data?.deliveries.some((d) => d.status === 'pending') ? 2000 : false),
  });
  const redeliver = useMutation({
    mutationFn: async (eventId: string) =>
      unwrap(
        await api.POST('/api/messaging-integration/deliveries/{eventId}/redeliver', { params: { path: { eventId } } })
      ),
    onSettled: () => void queryClient.invalidateQueries({ queryKey: ['webhook-deliveries'] }),
  });
  const rows = deliveries.data?.deliveries ?? [];
  return (
    <Stack component="section" aria-labelledby="deliveries-heading">
      <Group justify="space-between" wrap="wrap">
        <Title order={3} id="deliveries-heading">
          Delivery log
        </Title>
        <Button
          variant="default"
          size="compact-md"
          onClick={() => void deliveries.refetch()}
          loading={deliveries.isFetching}
        >
          Refresh
        </Button>
      </Group>
      {deliveries.isPending && <Loader aria-label="Loading deliveries" />}
      {deliveries.isError && (
        <Alert color="red" role="alert">
          {deliveries.error.message}
        </Alert>
      )}
      {redeliver.isError && (
        <Alert color="red" role="alert">
          {redeliver.error.message}
        </Alert>
      )}
      {deliveries.isSuccess && rows.length === 0 && <Text>No deliveries yet.</Text>}
      {rows.length > 0 && (
        <Table.ScrollContainer minWidth={320}>
          <Table striped aria-label="Deliveries">
            <Table.Thead>
              <Table.Tr>
                <Table.Th>Event</Table.Th>
                <Table.Th>Status</Table.Th>
                <Table.Th>Run</Table.Th>
                <Table.Th visibleFrom="sm">Last attempt</Table.Th>
                <Table.Th visibleFrom="sm">Created</Table.Th>
                <Table.Th>Action</Table.Th>
              </Table.Tr>
            </Table.Thead>
            <Table.Tbody>
              {rows.map((d) => {
                const last = d.attempts[0];
                return (
                  <Table.Tr key={d.event_id} data-testid="delivery-row" data-event-id={d.event_id}>
                    <Table.Td>
                      <Text size="sm">{d.event_type}</Text>
                      <Text size="xs" c="dimmed">
                        {d.event_id}
                      </Text>
                    </Table.Td>
                    <Table.Td>
                      <Badge color={color(d.status)} variant="light" data-testid="delivery-status">
                        {d.status}
                      </Badge>
                      {d.error && (
                        <Text size="xs" c="red">
                          {d.error}
                        </Text>
                      )}
                    </Table.Td>
                    <Table.Td data-testid="delivery-run">{d.run}</Table.Td>
                    <Table.Td visibleFrom="sm">
                      {last
                        ? `${last.status ?? 'no answer'} · ${last.latency_ms} ms${last.error ? ` · ${last.error}` : ''}`
                        : '—'}
                    </Table.Td>
                    <Table.Td visibleFrom="sm">{new Date(d.created_at).toLocaleString()}</Table.Td>
                    <Table.Td>
                      <Button
                        size="compact-sm"
                        variant="light"
                        disabled={d.status === 'pending'}
                        loading={redeliver.isPending && redeliver.variables === d.event_id}
                        aria-label={`Redeliver ${d.event_type} ${d.event_id}`}
                        onClick={() => redeliver.mutate(d.event_id)}
                      >
                        Redeliver
                      </Button>
                    </Table.Td>
                  </Table.Tr>
                );
              })}
            </Table.Tbody>
          </Table>
        </Table.ScrollContainer>
      )}
      {rows.length === limit && limit < MAX && (
        <Button variant="default" onClick={() => setLimit(Math.min(limit + PAGE, MAX))}>
          More deliveries
        </Button>
      )}
    </Stack>
  );
}
