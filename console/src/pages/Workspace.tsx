/**
 * One workspace's files: a folder's listing with breadcrumbs (`?path=`), upload into it, and the chosen file
 * (`?file=`) previewed with download, share link and delete (components/WorkspaceFile.tsx).
 */
import { Alert, Anchor, Breadcrumbs, Button, FileInput, Group, Loader, Stack, Table, Text, Title } from '@mantine/core';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import { Link, useParams, useSearchParams } from 'react-router';
import { api, ApiError, unwrap } from '../api/client';
import { WorkspaceFile } from '../components/WorkspaceFile';
import { breadcrumbs, formatSize, joinPath, normalizeFolder } from '../lib/workspacePaths';
import { NotFound } from './NotFound';

/** @returns the page's URL for a folder and, optionally, a chosen file. */
const pageSearch = (folder: string, file?: string): string => {
  const q = new URLSearchParams();
  if (folder) q.set('path', folder);
  if (file) q.set('file', file);
  const s = q.toString();
  return s ? `?${s}` : '?';
};

export function WorkspacePage() {
  const id = useParams().workspaceId ?? '';
  const [search] = useSearchParams();
  const folder = normalizeFolder(search.get('path'));
  const chosen = search.get('file');
  const queryClient = useQueryClient();
  const [upload, setUpload] = useState<File | null>(null);

  const space = useQuery({
    queryKey: ['workspaces', id],
    queryFn: async () => unwrap(await api.GET('/api/v1/spaces/{id}', { params: { path: { id } } })),
  });
  const listing = useQuery({
    queryKey: ['workspace-files', id, folder],
    queryFn: async () =>
      unwrap(await api.GET('/api/workspaces/{id}/files', { params: { path: { id }, query: { path: folder } } })),
    enabled: space.isSuccess,
  });
  const send = useMutation({
    mutationFn: async (file: File) =>
      unwrap(
        await api.PUT('/api/workspaces/{id}/files/content', {
          params: { path: { id }, query: { path: joinPath(folder, file.name) } },
          body: file as unknown as string,
          bodySerializer: (b: unknown) => b as BodyInit,
          headers: { 'Content-Type': 'application/octet-stream' },
        })
      ),
    onSuccess: () => {
      setUpload(null);
      void queryClient.invalidateQueries({ queryKey: ['workspace-files', id] });
      void queryClient.invalidateQueries({ queryKey: ['workspaces'] });
    },
  });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    if (upload) send.mutate(upload);
  };

  if (space.error instanceof ApiError && (space.error.status === 404 || space.error.status === 403))
    return <NotFound what="workspace" />;
  const entries = [...(listing.data?.entries ?? [])].sort(
    (a, b) => Number(b.type === 'directory') - Number(a.type === 'directory') || a.name.localeCompare(b.name)
  );
  return (
    <Stack>
      <Title order={1}>{space.data?.space.name ?? 'Workspace'}</Title>
      {space.isPending && <Loader aria-label="Loading the workspace" />}
      {space.isError && (
        <Alert color="red" role="alert">
          {space.error.message}
        </Alert>
      )}
      <nav aria-label="Folder">
        <Breadcrumbs separatorMargin={4} style={{ flexWrap: 'wrap' }}>
          {breadcrumbs(folder).map((b) => (
            <Anchor
              key={b.path}
              component={Link}
              to={pageSearch(b.path)}
              aria-current={b.path === folder ? 'page' : undefined}
            >
              {b.name}
            </Anchor>
          ))}
        </Breadcrumbs>
      </nav>
      <form onSubmit={submit} aria-label="Upload a file">
        <Group align="flex-end" wrap="wrap">
          <FileInput
            label="File to upload"
            placeholder="Choose a file"
            value={upload}
            onChange={setUpload}
            clearable
            w={260}
          />
          <Button type="submit" disabled={!upload} loading={send.isPending}>
            Upload
          </Button>
        </Group>
      </form>
      {send.isError && (
        <Alert color="red" role="alert">
          {send.error.message}
        </Alert>
      )}
      {send.isSuccess && <Text role="status">Uploaded {send.data.file.path}.</Text>}
      {listing.isPending && space.isSuccess && <Loader aria-label="Loading files" />}
      {listing.isError && (
        <Alert color="red" role="alert">
          {listing.error.message}
        </Alert>
      )}
      {listing.isSuccess && entries.length === 0 && <Text>This folder is empty.</Text>}
      {entries.length > 0 && (
        <Table.ScrollContainer minWidth={300}>
          <Table striped highlightOnHover aria-label="Files">
            <Table.Thead>
              <Table.Tr>
                <Table.Th>Name</Table.Th>
                <Table.Th>Size</Table.Th>
                <Table.Th visibleFrom="sm">Modified</Table.Th>
              </Table.Tr>
            </Table.Thead>
            <Table.Tbody>
              {entries.map((e) => (
                <Table.Tr key={e.path}>
                  <Table.Td style={{ wordBreak: 'break-all' }}>
                    {e.type === 'directory' ? (
                      <Anchor component={Link} to={pageSearch(e.path)} aria-label={`Folder ${e.name}`}>
                        {e.name}/
                      </Anchor>
                    ) : (
                      <Anchor
                        component={Link}
                        to={pageSearch(folder, e.path)}
                        fw={chosen === e.path ? 700 : undefined}
                        aria-current={chosen === e.path ? 'true' : undefined}
                      >
                        {e.name}
                      </Anchor>
                    )}
                  </Table.Td>
                  <Table.Td>{e.type === 'directory' ? '—' : formatSize(e.size)}</Table.Td>
                  <Table.Td visibleFrom="sm">{new Date(e.modified_at).toLocaleString()}</Table.Td>
                </Table.Tr>
              ))}
            </Table.Tbody>
          </Table>
        </Table.ScrollContainer>
      )}
      {chosen && space.isSuccess && (
        <WorkspaceFile key={chosen} workspaceId={id} path={chosen} closeTo={pageSearch(folder)} />
      )}
    </Stack>
  );
}
