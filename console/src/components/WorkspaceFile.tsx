/**
 * A workspace file, chosen on the Workspace page: its preview (POST …/files/preview: text in a <pre> as text, an
 * image as the API's thumbnail, anything else its type and size), a download link (the read route), a share link
 * (create, copy, revoke: the API lists no shares, so the ones made here are kept for this visit) and delete with an
 * in-page confirmation.
 */
import { Alert, Anchor, Button, Card, Code, CopyButton, Group, Image, Loader, Stack, Text, Title } from '@mantine/core';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { Link, useNavigate } from 'react-router';
import { api, unwrap } from '../api/client';
import { fileContentUrl, formatSize } from '../lib/workspacePaths';

const PRE_STYLE = {
  whiteSpace: 'pre-wrap',
  overflowWrap: 'anywhere',
  maxHeight: 480,
  overflow: 'auto',
  margin: 0,
  padding: '0.5rem',
  background: 'var(--mantine-color-gray-0)',
  fontSize: '0.85rem',
} as const;

interface Share {
  id: string;
  url: string;
  expires_at?: string | null;
  revoked?: boolean;
}

export function WorkspaceFile(props: { workspaceId: string; path: string; closeTo: string }) {
  const { workspaceId: id, path, closeTo } = props;
  const queryClient = useQueryClient();
  const navigate = useNavigate();
  const [confirmDelete, setConfirmDelete] = useState(false);
  const [shares, setShares] = useState<Share[]>([]);

  const preview = useQuery({
    queryKey: ['workspace-preview', id, path],
    queryFn: async () =>
      unwrap(await api.POST('/api/workspaces/{id}/files/preview', { params: { path: { id } }, body: { path } })),
  });
  const remove = useMutation({
    mutationFn: async () =>
      unwrap(await api.DELETE('/api/workspaces/{id}/files', { params: { path: { id }, query: { path } } })),
    onSuccess: () => {
      void queryClient.invalidateQueries({ queryKey: ['workspace-files', id] });
      void queryClient.invalidateQueries({ queryKey: ['workspaces'] });
      queryClient.removeQueries({ queryKey: ['workspace-preview', id, path] });
      void navigate(closeTo);
    },
  });
  const share = useMutation({
    mutationFn: async () =>
      unwrap(await api.POST('/api/workspaces/{id}/files/share', { params: { path: { id } }, body: { path } })),
    onSuccess: (data) => setShares((s) => [...s, data.share]),
  });
  const revoke = useMutation({
    mutationFn: async (shareId: string) =>
      unwrap(await api.DELETE('/api/workspaces/{id}/shares/{shareId}', { params: { path: { id, shareId } } })),
    onSuccess: (data) => setShares((s) => s.map((x) => (x.id === data.id ? { ...x, revoked: true } : x))),
  });

  const p = preview.data?.preview;
  const name = p?.name ?? path.split('/').pop() ?? path;
  return (
    <Card withBorder component="section" aria-labelledby="file-heading">
      <Stack>
        <Group justify="space-between" wrap="wrap">
          <Title order={2} id="file-heading" style={{ wordBreak: 'break-all' }}>
            {name}
          </Title>
          <Anchor component={Link} to={closeTo}>
            Close
          </Anchor>
        </Group>
        {preview.isPending && <Loader aria-label="Loading the preview" />}
        {preview.isError && (
          <Alert color="red" role="alert">
            {preview.error.message}
          </Alert>
        )}
        {p && (
          <Text size="sm" c="dimmed">
            {p.content_type} · {formatSize(p.size)} · modified {new Date(p.modified_at).toLocaleString()}
          </Text>
        )}
        {p && p.text !== undefined && (
          <>
            <pre data-testid="file-preview" aria-label={`Content of ${name}`} tabIndex={0} style={PRE_STYLE}>
              {p.text}
            </pre>
            {p.truncated && <Text size="sm">Only the beginning is shown: download the file for all of it.</Text>}
          </>
        )}
        {p?.thumbnail && (
          <Image
            src={`data:${p.thumbnail.content_type};base64,${p.thumbnail.data_base64}`}
            alt={`Thumbnail of ${name}`}
            w={p.thumbnail.width}
            maw="100%"
            fit="contain"
          />
        )}
        {p?.image && (
          <Text size="sm">
            {p.image.format} image, {p.image.width} × {p.image.height}
          </Text>
        )}
        {p && p.text === undefined && !p.thumbnail && <Text size="sm">No preview for this type of file.</Text>}
        <Group wrap="wrap">
          <Button component="a" href={fileContentUrl(id, path)} download={name} variant="light">
            Download
          </Button>
          <Button variant="light" loading={share.isPending} onClick={() => share.mutate()}>
            Create share link
          </Button>
          {!confirmDelete ? (
            <Button color="red" variant="light" onClick={() => setConfirmDelete(true)}>
              Delete
            </Button>
          ) : (
            <Group gap="xs" role="group" aria-label={`Confirm deleting ${name}`} wrap="wrap">
              <Text size="sm">Delete this file?</Text>
              <Button color="red" loading={remove.isPending} onClick={() => remove.mutate()}>
                Yes, delete
              </Button>
              <Button variant="default" onClick={() => setConfirmDelete(false)}>
                Keep it
              </Button>
            </Group>
          )}
        </Group>
        {(share.isError || revoke.isError || remove.isError) && (
          <Alert color="red" role="alert">
            {(share.error ?? revoke.error ?? remove.error)?.message}
          </Alert>
        )}
        {shares.map((s) => (
          <Stack key={s.id} gap={4} data-testid="share-link">
            <Text size="sm" fw={600}>
              {s.revoked
                ? 'Share link revoked: it answers 410 now.'
                : `Share link${s.expires_at ? `, until ${new Date(s.expires_at).toLocaleString()}` : ''}: anyone with it can download the file.`}
            </Text>
            <Code block style={{ wordBreak: 'break-all' }} data-testid="share-url">
              {s.url}
            </Code>
            {!s.revoked && (
              <Group gap="xs">
                <CopyButton value={s.url}>
                  {({ copied, copy }) => (
                    <Button size="compact-sm" variant="light" onClick={copy}>
                      {copied ? 'Copied' : 'Copy link'}
                    </Button>
                  )}
                </CopyButton>
                <Button
                  size="compact-sm"
                  color="red"
                  variant="light"
                  loading={revoke.isPending && revoke.variables === s.id}
                  onClick={() => revoke.mutate(s.id)}
                >
                  Revoke link
                </Button>
              </Group>
            )}
          </Stack>
        ))}
      </Stack>
    </Card>
  );
}
