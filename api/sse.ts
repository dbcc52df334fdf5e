/**
 * Server-sent events from the durable event log (ARCHITECTURE.md §6): `retry:` hint and `: connected` comment
 * first, then a replay of the stream after the client's position (`Last-Event-ID`), then live events from the
 * process's EventTailer, `: heartbeat` every 15 s, and the end of the response after a terminal event. Every event
 * carries `id: <seq>`, so a reconnecting client resumes with no gap and no duplicate. A client disconnect only
 * unsubscribes: it never cancels the work.
 */
import { PassThrough } from 'node:stream';
import { readEvents, type EventTailer, type LoggedEvent } from '../lib/eventLog';
import type { AppContext } from './context';

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
}

/**
 * The client's resume position: `Last-Event-ID` header, else `?lastEventId=`, else 0.
 * @param ctx the context.
 * @returns a non-negative integer.
 */
export function lastEventId(ctx: AppContext): number {
  const raw = ctx.get('last-event-id') || (typeof ctx.query.lastEventId === 'string' ? ctx.query.lastEventId : '');
  const n = Number(raw);
  return Number.isInteger(n) && n > 0 ? n : 0;
}

/**
 * @param ctx the context.
 * @returns whether the client asked for an event stream.
 */
export function wantsEventStream(ctx: AppContext): boolean {
  return /text\/event-stream/.test(ctx.get('accept'));
}

/**
 * Answers the request with an event stream (replay, then live).
 * @param ctx the context.
 * @param opts stream, position, tailer, shutdown signal, terminal test.
 */
export async function streamEvents(ctx: AppContext, opts: SseOptions): Promise<void> {
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

  let last = opts.afterSeq;
  let closed = false;
  let unsubscribe: (() => void) | undefined;
  const heartbeat = setInterval(() => body.write(': heartbeat\n\n'), opts.heartbeatMs ?? SSE_HEARTBEAT_MS);
  const close = (): void => {
    if (closed) return;
    closed = true;
    clearInterval(heartbeat);
    unsubscribe?.();
    opts.shutdown.removeEventListener('abort', close);
    body.end();
  };
  const send = (e: LoggedEvent): void => {
    if (closed || e.seq <= last) return;
    last = e.seq;
    body.write(`id: ${e.seq}\nevent: ${e.event}\ndata: ${JSON.stringify(e.data)}\n\n`);
    if (opts.isTerminal(e)) close();
  };
  ctx.res.once('close', close); // the client went away (or the response ended)
  opts.shutdown.addEventListener('abort', close);
  body.write(`retry: ${SSE_RETRY_MS}\n: connected\n\n`);

  for (const e of await readEvents(opts.streamId, last)) send(e);
  if (!closed) unsubscribe = opts.tailer.subscribe(opts.streamId, last, send);
}
