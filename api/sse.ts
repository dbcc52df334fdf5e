/**
 * Server-sent events from the durable event log (docs/architecture.md §6): the `: connected` comment first (SPEC: "Each
 * stream sends an initial connection comment"), then the `retry:` hint, then a replay of the stream after the
 * client's position (`Last-Event-ID`), then live events from the process's EventTailer, `: heartbeat` every 15 s,
 * and the end of the response after a terminal event. Every event carries `id: <seq>`, so a reconnecting client
 * resumes with no gap and no duplicate. A client disconnect only unsubscribes: it never cancels the work.
 *
 * Events past their retention are not skipped silently: the replay puts one `expired` event (`{from, to, message}`,
 * `id: <to>`) in place of each run of them, and a client resuming from its id continues with the first event still
 * kept. A stream whose subject has ended (`ended`) and whose last event expired ends with that `expired` event.
 *
 * Every stream ends [docs/decisions.md "Streams"]: the response ends right after the terminal event. A client that
 * has read the whole stream (its position is at or past the terminal event, the stream's last) gets `204 No
 * Content`, the HTML standard's signal that stops an EventSource from reconnecting, so no event is ever sent twice to
 * one client [docs/decisions.md "Console sessions (issue 36)" → "Fully read streams"]. A join past the head of a running stream
 * gets nothing until the terminal event, then that event (it never had it), and the response ends.
 */
import { sseConnections } from '../lib/metrics';
import { PassThrough } from 'node:stream';
import { check, type Schema } from '../lib/ajv';
import { ValidationError } from '../lib/errors';
import {
  EXPIRED_EVENT,
  lastSeq,
  readEvents,
  readHead,
  storedEventAt,
  type EventTailer,
  type Head,
  type LoggedEvent,
} from '../commands/eventLog';
import type { AppContext } from './context';
import { input } from './route';
import type { Validated } from './schemas';

/** Heartbeat interval of a stream that names none (the routes pass SSE_HEARTBEAT_MS from the configuration). */
export const SSE_HEARTBEAT_MS = 15_000;
export const SSE_RETRY_MS = 2_000;

export interface SseOptions {
  streamId: string;
  /** Last seq the client already has (0 = everything). */
  afterSeq: number;
  tailer: EventTailer;
  /** Aborted at process shutdown: open streams end. */
  shutdown: AbortSignal;
  /** Whether an event ends the stream. */
  isTerminal: (event: LoggedEvent) => boolean;
  heartbeatMs?: number;
  /**
   * How an event is written (default: `id: <seq>`, `event: <name>`, `data: <JSON>`); null skips the event (its
   * position still counts). The MCP endpoint writes its own event ids (api/mcp/index.ts).
   */
  format?: (event: LoggedEvent) => string | null;
  /**
   * Asked at every heartbeat: true when the stream's subject is gone (a deleted chat), and the response ends. A
   * reconnecting client then gets the route's 404, which stops an EventSource.
   */
  isGone?: () => Promise<boolean>;
  /**
   * The stream's subject has ended (an execution or a job in a terminal state, a finished clone): when its events
   * through the last one expired, the terminal event is gone too, so the `expired` event standing for them ends the
   * response instead of a wait for events that will never come.
   */
  ended?: boolean;
  /**
   * The stream's first events as the caller itself wrote them (a just-started execution's `meta`, committed before its
   * workflow started), for a client from the start (`afterSeq` 0): sent at once, without reading the head or the
   * log; whatever followed them comes through the tailer, which reads the head once as every subscription does.
   */
  known?: LoggedEvent[];
}

/** The default formatting of an event. */
const formatEvent = (e: LoggedEvent): string => `id: ${e.seq}\nevent: ${e.event}\ndata: ${JSON.stringify(e.data)}\n\n`;

/** A resume position (`Last-Event-ID` header, `?lastEventId=`): a non-negative integer, like every id we send. */
export const lastEventIdSchema = { type: 'integer', minimum: 0 } as const;

/**
 * The 204 of every stream route that ends: the client has read the whole stream (its `Last-Event-ID` is at or past
 * the terminal event), so nothing more will come. An EventSource stops reconnecting on it.
 */
export const streamFullyRead: Schema = {
  noContent: true,
  description:
    'The client has read the whole stream: its Last-Event-ID (or lastEventId) is at or past the terminal event. Nothing more will come (no event is sent twice); a browser’s EventSource stops reconnecting',
};

/** Query of the routes that join a stream. */
export const streamQuery = {
  type: 'object',
  additionalProperties: false,
  properties: { lastEventId: lastEventIdSchema },
} as const;

const lastEventIdHeader: Schema = { type: 'object', properties: { 'Last-Event-ID': lastEventIdSchema } };

/**
 * The client's resume position: the `Last-Event-ID` header (what EventSource sends when it reconnects), else the
 * route's validated `?lastEventId=` (declare {@link streamQuery}), else 0.
 * @param ctx the context.
 * @returns a non-negative integer.
 * @throws ValidationError (400) when the header is not a non-negative integer.
 */
export function lastEventId(ctx: AppContext): number {
  return requestedLastEventId(ctx) ?? 0;
}

/**
 * Like {@link lastEventId}, but undefined when the client named no position (streams that then replay only their
 * recent events).
 * @param ctx the context.
 * @returns a non-negative integer, or undefined.
 * @throws ValidationError (400) when the header is not a non-negative integer.
 */
export function requestedLastEventId(ctx: AppContext): number | undefined {
  const header = ctx.get('last-event-id');
  if (header !== '') {
    const holder: Record<string, unknown> = { 'Last-Event-ID': header };
    const problem = check(lastEventIdHeader, holder, 'query');
    if (problem) throw new ValidationError(problem);
    return holder['Last-Event-ID'] as number;
  }
  // Every route that joins a stream declares `lastEventId` in its query as streamQuery does.
  return (input(ctx).query as Validated<typeof streamQuery> | undefined)?.lastEventId;
}

/**
 * @param ctx the context.
 * @returns whether the client asked for an event stream.
 */
export function wantsEventStream(ctx: AppContext): boolean {
  return /text\/event-stream/.test(ctx.get('accept'));
}

/**
 * Answers 200 `text/event-stream` on a long-lived connection (no socket timeout, no Nagle, keep-alive; no proxy
 * buffering or transform): the one way every stream route opens its response.
 * @param ctx the request.
 * @returns the body to write events to (end it to close the stream).
 */
export function openEventStream(ctx: AppContext): PassThrough {
  const socket = ctx.req.socket;
  socket.setTimeout(0);
  socket.setNoDelay(true);
  socket.setKeepAlive(true);
  ctx.status = 200;
  ctx.set('Content-Type', 'text/event-stream; charset=utf-8');
  ctx.set('Cache-Control', 'no-cache, no-transform');
  ctx.set('Connection', 'keep-alive');
  ctx.set('X-Accel-Buffering', 'no');
  const body = new PassThrough();
  ctx.body = body;
  return body;
}

/**
 * Answers the request with an event stream (replay, then live).
 * @param ctx the context.
 * @param opts stream, position, tailer, shutdown signal, terminal test.
 */
export async function streamEvents(ctx: AppContext, opts: SseOptions): Promise<void> {
  const known = opts.afterSeq === 0 && opts.known?.length ? opts.known : undefined;
  // The head is read before anything is answered: a client that has the stream's terminal event already gets 204.
  // Events the caller wrote itself are the head so far (none of them ends the stream).
  // An execution's `meta` held by its record comes with the head read (commands/executionMeta.ts).
  const headRead: Head = known ? { seq: known[known.length - 1].seq } : await readHead(opts.streamId);
  const head = headRead.seq;
  if (!known && (await fullyRead(opts, headRead))) {
    ctx.status = 204;
    ctx.set('Cache-Control', 'no-store');
    return;
  }
  const body = openEventStream(ctx);

  let last = opts.afterSeq;
  let closed = false;
  let unsubscribe: (() => void) | undefined;
  const heartbeat = setInterval(() => {
    body.write(': heartbeat\n\n');
    opts.isGone?.().then(
      (gone) => gone && close(),
      () => undefined // the database is unreachable: keep the stream; the next heartbeat asks again
    );
  }, opts.heartbeatMs ?? SSE_HEARTBEAT_MS);
  sseConnections.inc();
  const close = (): void => {
    if (closed) return;
    closed = true;
    sseConnections.dec();
    clearInterval(heartbeat);
    unsubscribe?.();
    opts.shutdown.removeEventListener('abort', close);
    body.end();
  };
  const send = (e: LoggedEvent): void => {
    if (closed) return;
    const terminal = isTerminalAt(opts, e, head);
    // Events the client has are skipped. A terminal one reaches here only past the head the client's position was
    // checked against (a position claimed beyond the head of a running stream): the client never had it.
    if (e.seq <= last && !terminal) return;
    last = Math.max(last, e.seq);
    const text = (opts.format ?? formatEvent)(e);
    if (text !== null) body.write(text);
    if (terminal) close();
  };
  ctx.res.once('close', close); // the client went away (or the response ended)
  opts.shutdown.addEventListener('abort', close);
  body.write(`: connected\nretry: ${SSE_RETRY_MS}\n\n`);

  // Read from the client's position, but never from beyond the head's last event (not terminal, else the client got
  // 204 above: skipped as one it has).
  const from = Math.min(opts.afterSeq, Math.max(head - 1, 0));
  let read = from;
  // The head just read bounds the replay (events after it come through the tailer, which reads the head again).
  for (const e of known ?? (await readEvents(opts.streamId, from, undefined, headRead))) {
    read = e.seq;
    send(e);
  }
  // Events the caller itself just wrote need no read of the head after them (two reads per streamed execution).
  if (!closed) unsubscribe = opts.tailer.subscribe(opts.streamId, read, send, !known);
}

/**
 * @param opts the stream's options (its terminal test, whether its subject ended).
 * @param e an event.
 * @param head the stream's head when the client joined.
 * @returns whether the event ends the stream: a terminal event, or, when the subject has ended, the `expired` event
 *   standing for events through the head (the terminal one among them).
 */
function isTerminalAt(opts: SseOptions, e: LoggedEvent, head: number): boolean {
  return opts.isTerminal(e) || (opts.ended === true && e.event === EXPIRED_EVENT && e.seq >= head);
}

/**
 * @param opts the stream and the client's position.
 * @param read the stream's head as read.
 * @returns whether the client has read the whole stream: its position is at or past the head, and the event at the
 *   head ends the stream.
 */
async function fullyRead(opts: SseOptions, read: Head): Promise<boolean> {
  const head = read.seq;
  // A position past the head: the client may hold the terminal event already, handed to it from memory after its
  // insert and before its head was raised (commands/eventLog.ts). Then it has read the whole stream.
  if (opts.afterSeq > head) {
    const past = await storedEventAt(opts.streamId, opts.afterSeq);
    if (past && isTerminalAt(opts, past, head)) return true;
  }
  if (head === 0 || opts.afterSeq < head) return false;
  const [last] = await readEvents(opts.streamId, head - 1, 1, read);
  return last !== undefined && last.seq === head && isTerminalAt(opts, last, head);
}

/**
 * Answers a stream that replays its recent events to a client naming no position (chats, jobs): every event after
 * `Last-Event-ID` (or `?lastEventId=`), else the last `replay` events, then live ones.
 * @param ctx the context.
 * @param deps the process's tailer, shutdown signal and configuration.
 * @param opts the stream, how many events a client naming no position gets, and the terminal test.
 */
export async function streamRecentEvents(
  ctx: AppContext,
  deps: { events: EventTailer; shutdown: AbortSignal; config: { sseHeartbeatMs: number } },
  opts: Pick<SseOptions, 'streamId' | 'isTerminal' | 'isGone' | 'ended'> & { replay: number }
): Promise<void> {
  const requested = requestedLastEventId(ctx);
  const afterSeq = requested ?? Math.max(0, (await lastSeq(opts.streamId)) - opts.replay);
  await streamEvents(ctx, {
    streamId: opts.streamId,
    afterSeq,
    tailer: deps.events,
    shutdown: deps.shutdown,
    isTerminal: opts.isTerminal,
    heartbeatMs: deps.config.sseHeartbeatMs,
    isGone: opts.isGone,
    ended: opts.ended,
  });
}
