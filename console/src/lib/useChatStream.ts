/**
 * A chat's live transcript: its history merged with its event stream (EventSource on GET /api/chats/{id}/events).
 * EventSource reconnects by itself after a dropped connection and resumes with Last-Event-ID (no gap, no repeat);
 * a reload reads the history again and the stream's replay (lib/transcript.ts decides what of it is new). The
 * connection's state is shown: `reconnecting` while EventSource retries.
 */
import { useEffect, useReducer, useState } from 'react';
import { openEventStream, type Connection } from './eventSource';
import {
  applyEvent,
  CHAT_EVENTS,
  fromHistory,
  type ChatEvent,
  type ChatStatus,
  type HistoryMessage,
  type Transcript,
} from './transcript';

export type { Connection } from './eventSource';

type Action = { type: 'event'; event: ChatEvent } | { type: 'reset'; transcript: Transcript };

function reducer(state: Transcript, action: Action): Transcript {
  return action.type === 'reset' ? action.transcript : applyEvent(state, action.event);
}

/**
 * @param chatId the chat.
 * @param history its stored messages and status (undefined until read).
 * @returns the transcript and the connection's state.
 */
export function useChatStream(
  chatId: string,
  history: { messages: HistoryMessage[]; status: ChatStatus } | undefined
): { transcript: Transcript; connection: Connection } {
  const [transcript, dispatch] = useReducer(reducer, undefined, () => fromHistory([]));
  const [connection, setConnection] = useState<Connection>('connecting');
  // Set once the stream's replay began inside a running reply: the stream is read again from its start.
  const [fromStart, setFromStart] = useState(false);
  const needsFullReplay = transcript.needsFullReplay && !fromStart;

  useEffect(() => {
    if (needsFullReplay) setFromStart(true);
  }, [needsFullReplay]);

  useEffect(() => {
    if (!history) return;
    dispatch({ type: 'reset', transcript: fromHistory(history.messages, history.status) });
    const url = `/api/chats/${encodeURIComponent(chatId)}/events${fromStart ? '?lastEventId=0' : ''}`;
    return openEventStream(url, CHAT_EVENTS, {
      onEvent: (event) => dispatch({ type: 'event', event }),
      onConnection: setConnection,
    });
  }, [chatId, history, fromStart]);

  return { transcript, connection };
}
