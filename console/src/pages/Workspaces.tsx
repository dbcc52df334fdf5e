/** The organization's workspaces (GET /api/v1/spaces, 20 a page), each leading to its files. */
import { Alert, Anchor, Badge, Button, Loader, Stack, Table, Text, Title } from '@mantine/core';
import { useInfiniteQuery } from '@tanstack/react-query';
import { Link } from 'react-router';
import { api, unwrap } from '../api/client';

export function WorkspacesPage() {
  const spaces = useInfiniteQuery({
    queryKey: ['workspaces'],
    initialPageParam: undefined as string | undefined,
    queryFn: async ({ pageParam }) =>
      unwrap(
        await api.GET('/api/v1/spaces', {
          params: { query: { limit: 20, ...(pageParam ? { cursor: pageParam } : {}) } },
        })
      ),
    getNextPageParam: (last) => last.nextCursor ?? undefined,
  });
  const rows = spaces.data?.pages.flatMap((p) => p.spaces) ?? [];
  return (
    <Stack>
      <Title order={1}>Workspaces</Title>
      {spaces.isPending && <Loader aria-label="Loading workspaces" />}
      {spaces.isError && (
        <Alert color="red" role="alert">
          {spaces.error.message}
        </Alert>
      )}
      {spaces.isSuccess && rows.length === 0 && <Text>No workspaces yet.</Text>}
      {rows.length > 0 && (
        <Table.ScrollContainer minWidth={320}>
          <Table striped highlightOnHover aria-label="Workspaces">
            <Table.Thead>
              <Table.Tr>
                <Table.Th>Workspace</Table.Th>
                <Table.Th>Files</Table.Th>
                <Table.Th visibleFrom="sm">Visibility</Table.Th>
                <Table.Th visibleFrom="sm">Description</Table.Th>
              </Table.Tr>
            </Table.Thead>
            <Table.Tbody>
              {rows.map((s) => (
                <Table.Tr key={s.id}>
                  <Table.Td>
                    <Anchor component={Link} to={`/workspaces/${encodeURIComponent(s.id)}`}>
                      {s.name}
                    </Anchor>{' '}
                    {s.isDefault && (
                      <Badge size="xs" variant="light">
                        default
                      </Badge>
                    )}
                  </Table.Td>
                  <Table.Td>{s.fileCount}</Table.Td>
                  <Table.Td visibleFrom="sm">{s.visibility}</Table.Td>
                  <Table.Td visibleFrom="sm">
                    <Text size="sm" lineClamp={1}>
                      {s.description}
                    </Text>
                  </Table.Td>
                </Table.Tr>
              ))}
            </Table.Tbody>
          </Table>
        </Table.ScrollContainer>
      )}
      {spaces.hasNextPage && (
        <Button variant="default" onClick={() => void spaces.fetchNextPage()} loading={spaces.isFetchingNextPage}>
          More workspaces
        </Button>
      )}
    </Stack>
  );
}
