/**
 * A chat's transcript in the page: its history (GET /api/chats/{id}/messages) merged with its event stream
 * (GET /api/chats/{id}/events), without gaps or duplicates.
 *
 * - Events are ordered by their `id` (the stream's seq): one at or below the last applied is a repeat and ignored.
 * - Every execution's events start with its `message.created` (activities/chatStream.ts). A turn whose first event
 *   this stream showed is "tracked": its reply and steps are built from the events. A turn of the history that is
 *   finished and not tracked shows its stored reply and ignores the tail of its events a replay brings. A turn still
 *   running whose start the stream did not show (the replay of the last events began inside it) asks for a replay
 *   from the stream's start (`needsFullReplay`), so a reply is never shown with its beginning missing.
 */

import { isNewEvent, type StreamEvent } from './eventSource';

export type ChatStatus = 'standby' | 'working' | 'done' | 'needs_attention' | 'error';

export interface HistoryMessage {
  id: string;
  role: 'user' | 'assistant';
  content: string;
  position: number;
  execution_id: string;
}

export interface TextSegment {
  kind: 'text';
  text: string;
  complete: boolean;
}
export interface ToolSegment {
  kind: 'tool';
  id: string;
  name: string;
  input: unknown;
  mcp?: { server: string; tool: string };
  result?: { content: string; isError: boolean };
}
export interface SubagentSegment {
  kind: 'subagent';
  id: string;
  agentId: string;
  status: 'running' | 'completed' | 'failed' | 'cancelled';
}
export type Segment = TextSegment | ToolSegment | SubagentSegment;

export interface Turn {
  executionId: string;
  position: number;
  user?: string;
  /** The stored reply (history). */
  reply?: string;
  /** The stream showed this turn from its start: `segments` is its whole reply. */
  tracked: boolean;
  segments: Segment[];
  /** Its execution ended (a stored reply, or a final `chat.status`). */
  finished: boolean;
  error?: string;
}

export interface Transcript {
  turns: Turn[];
  lastSeq: number;
  status?: ChatStatus;
  needsFullReplay: boolean;
}

/** One event of the chat stream, as EventSource gives it (`id` = lastEventId, data parsed). */
export type ChatEvent = StreamEvent;

/** Events of the chat stream the page listens to. */
export const CHAT_EVENTS = [
  'message.created',
  'message.delta',
  'message.completed',
  'chat.status',
  'tool.call',
  'tool.result',
  'subagent.started',
  'subagent.finished',
] as const;

/**
 * @param messages the chat's stored messages, in order.
 * @param status the chat's status.
 * @returns the transcript before any event.
 */
export function fromHistory(messages: HistoryMessage[], status?: ChatStatus): Transcript {
  const turns = new Map<string, Turn>();
  for (const m of messages) {
    const turn = turns.get(m.execution_id) ?? {
      executionId: m.execution_id,
      position: m.position,
      tracked: false,
      segments: [],
      finished: false,
    };
    if (m.role === 'user') turn.user = m.content;
    else {
      turn.reply = m.content;
      turn.finished = true;
    }
    turn.position = Math.min(turn.position, m.position);
    turns.set(m.execution_id, turn);
  }
  return {
    turns: [...turns.values()].sort((a, b) => a.position - b.position),
    lastSeq: 0,
    status,
    needsFullReplay: false,
  };
}

const str = (v: unknown): string => (typeof v === 'string' ? v : '');

/** @returns the turn's segments with one changed or added (a new array: the page re-renders). */
function withSegments(turn: Turn, change: (segments: Segment[]) => Segment[]): Turn {
  return { ...turn, segments: change(turn.segments.slice()) };
}

function applyToTurn(turn: Turn, e: ChatEvent): Turn {
  const d = e.data;
  switch (e.event) {
    case 'message.delta':
      return withSegments(turn, (s) => {
        const last = s[s.length - 1];
        if (last?.kind === 'text' && !last.complete) s[s.length - 1] = { ...last, text: last.text + str(d.text) };
        else s.push({ kind: 'text', text: str(d.text), complete: false });
        return s;
      });
    case 'message.completed': {
      const content = str((d.message as { content?: unknown } | undefined)?.content);
      return withSegments(turn, (s) => {
        const last = s[s.length - 1];
        if (last?.kind === 'text' && !last.complete) s[s.length - 1] = { kind: 'text', text: content, complete: true };
        else s.push({ kind: 'text', text: content, complete: true });
        return s;
      });
    }
    case 'tool.call': {
      const mcp = d.mcp as { server?: unknown; tool?: unknown } | undefined;
      return withSegments(turn, (s) => [
        ...s,
        {
          kind: 'tool',
          id: str(d.tool_use_id),
          name: str(d.name),
          input: d.input,
          ...(mcp ? { mcp: { server: str(mcp.server), tool: str(mcp.tool) } } : {}),
        },
      ]);
    }
    case 'tool.result':
      return withSegments(turn, (s) =>
        s.map((seg) =>
          seg.kind === 'tool' && seg.id === d.tool_use_id
            ? { ...seg, result: { content: str(d.content), isError: d.is_error === true } }
            : seg
        )
      );
    case 'subagent.started':
      return withSegments(turn, (s) => [
        ...s,
        { kind: 'subagent', id: str(d.subagent_execution_id), agentId: str(d.agent_id), status: 'running' },
      ]);
    case 'subagent.finished':
      return withSegments(turn, (s) =>
        s.map((seg) =>
          seg.kind === 'subagent' && seg.id === d.subagent_execution_id
            ? { ...seg, status: str(d.status) as SubagentSegment['status'] }
            : seg
        )
      );
    case 'chat.status': {
      if (d.status === 'working') return turn;
      const error = (d.error as { message?: unknown } | null | undefined)?.message;
      return { ...turn, finished: true, ...(typeof error === 'string' ? { error } : {}) };
    }
    default:
      return turn;
  }
}

/**
 * @param t the transcript.
 * @param e the next event of the stream.
 * @returns the transcript with the event applied (the same object when the event changes nothing).
 */
export function applyEvent(t: Transcript, e: ChatEvent): Transcript {
  if (!isNewEvent(t.lastSeq, e)) return t;
  const next: Transcript = { ...t, lastSeq: e.id };
  if (e.event === 'chat.status' && typeof e.data.status === 'string') next.status = e.data.status as ChatStatus;
  const executionId = str(e.data.execution_id);
  if (!executionId) return next;
  const index = t.turns.findIndex((turn) => turn.executionId === executionId);
  if (e.event === 'message.created') {
    const message = e.data.message as { content?: unknown; position?: unknown } | undefined;
    const position = typeof message?.position === 'number' ? message.position : Number.MAX_SAFE_INTEGER;
    const turn: Turn = {
      executionId,
      position: index >= 0 ? t.turns[index].position : position,
      user: str(message?.content),
      reply: index >= 0 ? t.turns[index].reply : undefined,
      tracked: true,
      segments: [],
      finished: false,
    };
    const turns = index >= 0 ? t.turns.map((x, i) => (i === index ? turn : x)) : [...t.turns, turn];
    return { ...next, turns: turns.sort((a, b) => a.position - b.position) };
  }
  const turn = index >= 0 ? t.turns[index] : undefined;
  if (!turn?.tracked) {
    // A finished turn of the history keeps its stored reply; one still running whose start was not shown needs
    // the stream from its beginning.
    if (turn?.finished) return next;
    return { ...next, needsFullReplay: true };
  }
  return { ...next, turns: t.turns.map((x, i) => (i === index ? applyToTurn(x, e) : x)) };
}

/**
 * @param turn a turn.
 * @returns its reply's text as the page shows it (the segments' text when tracked, else the stored reply).
 */
export function replyText(turn: Turn): string {
  if (!turn.tracked) return turn.reply ?? '';
  return turn.segments
    .filter((s): s is TextSegment => s.kind === 'text')
    .map((s) => s.text)
    .join('\n\n');
}
