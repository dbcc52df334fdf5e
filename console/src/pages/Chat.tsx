/**
 * A chat, where an agent's chatUrl leads (`/<org>/spaces/<spaceId>/chats/<chatId>`): its history, the reply
 * streaming in, tool calls / MCP calls / sub-agent runs as collapsible steps, and a message box. A chat the session
 * cannot read (another organization's, a deleted one, or a path whose organization or space is not the chat's)
 * shows the not-found page and nothing of it.
 */
import { Alert, Button, Group, Loader, Stack, Textarea, Title } from '@mantine/core';
import { useMutation, useQuery } from '@tanstack/react-query';
import { useMemo, useState, type FormEvent, type KeyboardEvent } from 'react';
import { useParams } from 'react-router';
import { api, ApiError, unwrap } from '../api/client';
import { ConnectionBadge } from '../components/ConnectionBadge';
import { StatusBadge } from '../components/StatusBadge';
import { TurnView } from '../components/TurnView';
import type { HistoryMessage } from '../lib/transcript';
import { useChatStream } from '../lib/useChatStream';
import { NotFound } from './NotFound';

/** Reads every page of a chat's history. */
async function readHistory(chatId: string) {
  const messages: HistoryMessage[] = [];
  let cursor: string | undefined;
  for (;;) {
    const page = unwrap(
      await api.GET('/api/chats/{id}/messages', {
        params: { path: { id: chatId }, query: { limit: 1000, ...(cursor ? { cursor } : {}) } },
      })
    );
    messages.push(...page.messages);
    if (!page.next_cursor) return { chat: page.chat, messages };
    cursor = page.next_cursor;
  }
}

export function ChatPage() {
  const { org = '', spaceId = '', chatId = '' } = useParams();
  const history = useQuery({
    queryKey: ['chat', chatId],
    queryFn: () => readHistory(chatId),
    staleTime: Infinity,
  });
  const chat = history.data?.chat;
  const belongs = chat !== undefined && chat.organization_id === org && chat.workspace_id === spaceId;
  const data = history.data;
  // One object per read of the history: the stream opens again only when the history was read again.
  const streamInput = useMemo(
    () => (data && belongs ? { messages: data.messages, status: data.chat.status } : undefined),
    [data, belongs]
  );
  const { transcript, connection } = useChatStream(chatId, streamInput);

  const [message, setMessage] = useState('');
  const send = useMutation({
    mutationFn: async (text: string) =>
      unwrap(await api.POST('/api/chats/{id}/messages', { params: { path: { id: chatId } }, body: { message: text } })),
    onSuccess: () => setMessage(''),
  });
  const submit = (e?: FormEvent) => {
    e?.preventDefault();
    if (message.trim() && !send.isPending) send.mutate(message);
  };
  const onKeyDown = (e: KeyboardEvent<HTMLTextAreaElement>) => {
    if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) submit();
  };

  if (history.isPending) return <Loader aria-label="Loading the chat" />;
  if ((history.isError && history.error instanceof ApiError && history.error.status === 404) || (chat && !belongs)) {
    return <NotFound what="chat" />;
  }
  if (history.isError)
    return (
      <Alert color="red" role="alert">
        {history.error.message}
      </Alert>
    );
  const status = transcript.status ?? chat!.status;
  return (
    <Stack maw={900}>
      <Group justify="space-between" wrap="wrap">
        <Title order={1} size="h2" style={{ overflowWrap: 'anywhere' }}>
          {chat!.title}
        </Title>
        <Group gap="xs">
          <StatusBadge status={status} />
          <ConnectionBadge connection={connection} />
        </Group>
      </Group>
      <Stack component="ol" gap={0} p={0} m={0} aria-label="Conversation">
        {transcript.turns.map((turn) => (
          <TurnView key={turn.executionId} turn={turn} />
        ))}
      </Stack>
      <form onSubmit={submit}>
        <Stack gap="xs">
          <Textarea
            label="Message"
            value={message}
            onChange={(e) => setMessage(e.currentTarget.value)}
            onKeyDown={onKeyDown}
            autosize
            minRows={2}
            maxRows={10}
            description="Ctrl+Enter sends"
          />
          {send.isError && (
            <Alert color="red" role="alert">
              {send.error instanceof ApiError && send.error.status === 409
                ? 'The agent is still answering the previous message: send again once it is done.'
                : send.error.message}
            </Alert>
          )}
          <Group>
            <Button type="submit" loading={send.isPending} disabled={!message.trim()}>
              Send
            </Button>
          </Group>
        </Stack>
      </form>
    </Stack>
  );
}
