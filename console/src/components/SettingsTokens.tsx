/**
 * Settings › Personal access tokens (GET/POST/DELETE /api/v1/keys): the list, 20 a page; create with a name and an
 * expiry, the clear token shown once with a copy button; revoke with an in-page confirmation. Revoking the token
 * this session was signed in with ends the session: the next call answers 401 and the console goes to sign-in.
 */
import {
  Alert,
  Badge,
  Button,
  Code,
  CopyButton,
  Group,
  Loader,
  Select,
  Stack,
  Table,
  Text,
  TextInput,
  Title,
} from '@mantine/core';
import { useInfiniteQuery, useMutation, useQueryClient } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import { api, unwrap } from '../api/client';
import { expiryFrom, EXPIRY_CHOICES, tokenState } from '../lib/settings';

export function SettingsTokens() {
  const queryClient = useQueryClient();
  const [name, setName] = useState('');
  const [expiry, setExpiry] = useState('30');
  const [created, setCreated] = useState<{ name: string; token: string } | null>(null);
  const [confirming, setConfirming] = useState<string | null>(null);

  const keys = useInfiniteQuery({
    queryKey: ['keys'],
    initialPageParam: undefined as string | undefined,
    queryFn: async ({ pageParam }) =>
      unwrap(
        await api.GET('/api/v1/keys', { params: { query: { limit: 20, ...(pageParam ? { cursor: pageParam } : {}) } } })
      ),
    getNextPageParam: (last) => last.nextCursor ?? undefined,
  });
  const create = useMutation({
    mutationFn: async (body: { name: string; expiresAt?: string }) => unwrap(await api.POST('/api/v1/keys', { body })),
    onSuccess: (data) => {
      setCreated({ name: data.key.name, token: data.token });
      setName('');
      void queryClient.invalidateQueries({ queryKey: ['keys'] });
    },
  });
  const revoke = useMutation({
    mutationFn: async (id: string) => unwrap(await api.DELETE('/api/v1/keys/{id}', { params: { path: { id } } })),
    onSuccess: () => {
      setConfirming(null);
      void queryClient.invalidateQueries({ queryKey: ['keys'] });
    },
  });

  const submit = (e: FormEvent) => {
    e.preventDefault();
    if (!name.trim()) return;
    const expiresAt = expiryFrom(expiry, Date.now());
    create.mutate({ name: name.trim(), ...(expiresAt ? { expiresAt } : {}) });
  };
  const rows = keys.data?.pages.flatMap((p) => p.keys) ?? [];

  return (
    <Stack component="section" aria-labelledby="tokens-heading">
      <Title order={2} id="tokens-heading">
        Personal access tokens
      </Title>
      <form onSubmit={submit} aria-label="New token">
        <Group align="flex-end" wrap="wrap">
          <TextInput
            label="Token name"
            value={name}
            onChange={(e) => setName(e.currentTarget.value)}
            required
            maxLength={200}
          />
          <Select
            label="Expires"
            data={EXPIRY_CHOICES}
            value={expiry}
            allowDeselect={false}
            onChange={(v) => setExpiry(v ?? '30')}
            w={160}
          />
          <Button type="submit" loading={create.isPending} disabled={!name.trim()}>
            Create token
          </Button>
        </Group>
      </form>
      {create.isError && (
        <Alert color="red" role="alert">
          {create.error.message}
        </Alert>
      )}
      {created && (
        <Alert color="green" title={`Token “${created.name}” created`} data-testid="new-token">
          <Stack gap="xs">
            <Text size="sm" fw={600}>
              Copy it now: you will not see it again.
            </Text>
            <Code block data-testid="new-token-value" style={{ wordBreak: 'break-all' }}>
              {created.token}
            </Code>
            <Group>
              <CopyButton value={created.token}>
                {({ copied, copy }) => (
                  <Button size="compact-md" variant="light" onClick={copy}>
                    {copied ? 'Copied' : 'Copy token'}
                  </Button>
                )}
              </CopyButton>
              <Button size="compact-md" variant="default" onClick={() => setCreated(null)}>
                Done
              </Button>
            </Group>
          </Stack>
        </Alert>
      )}
      {keys.isPending && <Loader aria-label="Loading tokens" />}
      {keys.isError && (
        <Alert color="red" role="alert">
          {keys.error.message}
        </Alert>
      )}
      {keys.isSuccess && rows.length === 0 && <Text>No personal access tokens.</Text>}
      {revoke.isError && (
        <Alert color="red" role="alert">
          {revoke.error.message}
        </Alert>
      )}
      {rows.length > 0 && (
        <Table.ScrollContainer minWidth={320}>
          <Table striped aria-label="Personal access tokens">
            <Table.Thead>
              <Table.Tr>
                <Table.Th>Name</Table.Th>
                <Table.Th>State</Table.Th>
                <Table.Th visibleFrom="sm">Created</Table.Th>
                <Table.Th visibleFrom="sm">Expires</Table.Th>
                <Table.Th visibleFrom="sm">Last used</Table.Th>
                <Table.Th>Action</Table.Th>
              </Table.Tr>
            </Table.Thead>
            <Table.Tbody>
              {rows.map((k) => {
                const state = tokenState(k, Date.now());
                const label = k.name || k.hint;
                return (
                  <Table.Tr key={k.id} data-testid="token-row">
                    <Table.Td>
                      <Text size="sm">{label}</Text>
                      <Text size="xs" c="dimmed">
                        {k.hint}
                      </Text>
                    </Table.Td>
                    <Table.Td>
                      <Badge color={state === 'active' ? 'green' : 'gray'} variant="light">
                        {state}
                      </Badge>
                    </Table.Td>
                    <Table.Td visibleFrom="sm">{new Date(k.createdAt).toLocaleDateString()}</Table.Td>
                    <Table.Td visibleFrom="sm">
                      {k.expiresAt ? new Date(k.expiresAt).toLocaleDateString() : 'never'}
                    </Table.Td>
                    <Table.Td visibleFrom="sm">{k.lastUsedAt ? new Date(k.lastUsedAt).toLocaleString() : '—'}</Table.Td>
                    <Table.Td>
                      {state === 'active' && confirming !== k.id && (
                        <Button
                          size="compact-sm"
                          color="red"
                          variant="light"
                          aria-label={`Revoke ${label}`}
                          onClick={() => setConfirming(k.id)}
                        >
                          Revoke
                        </Button>
                      )}
                      {state === 'active' && confirming === k.id && (
                        <Stack gap={4} role="group" aria-label={`Confirm revoking ${label}`}>
                          <Text size="xs">Revoke it? Anything using it stops working at once.</Text>
                          <Group gap={4} wrap="wrap">
                            <Button
                              size="compact-sm"
                              color="red"
                              loading={revoke.isPending}
                              onClick={() => revoke.mutate(k.id)}
                            >
                              Yes, revoke
                            </Button>
                            <Button size="compact-sm" variant="default" onClick={() => setConfirming(null)}>
                              Keep it
                            </Button>
                          </Group>
                        </Stack>
                      )}
                    </Table.Td>
                  </Table.Tr>
                );
              })}
            </Table.Tbody>
          </Table>
        </Table.ScrollContainer>
      )}
      {keys.hasNextPage && (
        <Button variant="default" onClick={() => void keys.fetchNextPage()} loading={keys.isFetchingNextPage}>
          More tokens
        </Button>
      )}
    </Stack>
  );
}
