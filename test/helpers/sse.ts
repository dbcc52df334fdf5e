/**
 * Reading server-sent events in tests with a real parser (eventsource-parser), over real HTTP.
 */
import http from 'node:http';
import { createParser } from 'eventsource-parser';

export interface SseEvent {
  id?: string;
  event?: string;
  data: string;
}

/**
 * @param text a complete event-stream body.
 * @returns its events, in order.
 */
export function parseSse(text: string): SseEvent[] {
  const events: SseEvent[] = [];
  const parser = createParser({ onEvent: (e) => events.push({ id: e.id, event: e.event, data: e.data }) });
  parser.feed(text);
  return events;
}

export interface LiveStream {
  status: number;
  headers: http.IncomingHttpHeaders;
  events: SseEvent[];
  raw: string;
  /** Resolves once `count` events arrived (or the stream ended). */
  waitFor(count: number, timeoutMs?: number): Promise<void>;
  /** Resolves when the server ends the response. */
  ended: Promise<void>;
  /** Disconnects (the client goes away). */
  close(): void;
}

/**
 * Opens an event stream and parses it as it arrives.
 * @param url full URL.
 * @param options method, headers and JSON body.
 * @returns the live stream once the response headers arrived.
 */
export function openSse(
  url: string,
  options: { method?: string; headers?: Record<string, string>; body?: object } = {}
): Promise<LiveStream> {
  return new Promise((resolve, reject) => {
    const payload = options.body ? JSON.stringify(options.body) : undefined;
    const req = http.request(url, {
      method: options.method ?? 'GET',
      headers: {
        accept: 'text/event-stream',
        ...(payload
          ? { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(payload)) }
          : {}),
        ...options.headers,
      },
    });
    req.on('error', reject);
    req.on('response', (res) => {
      const events: SseEvent[] = [];
      let raw = '';
      const waiters: Array<() => void> = [];
      const parser = createParser({ onEvent: (e) => events.push({ id: e.id, event: e.event, data: e.data }) });
      let done = false;
      const ended = new Promise<void>((r) => {
        res.on('end', () => {
          done = true;
          r();
          waiters.splice(0).forEach((w) => w());
        });
        res.on('close', () => {
          done = true;
          r();
          waiters.splice(0).forEach((w) => w());
        });
      });
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        raw += chunk;
        parser.feed(chunk);
        waiters.splice(0).forEach((w) => w());
      });
      resolve({
        status: res.statusCode ?? 0,
        headers: res.headers,
        events,
        get raw() {
          return raw;
        },
        ended,
        close: () => req.destroy(),
        waitFor: async (count, timeoutMs = 20_000) => {
          const deadline = Date.now() + timeoutMs;
          while (events.length < count && !done) {
            if (Date.now() > deadline)
              throw new Error(`timed out waiting for ${count} events; got ${events.length}:\n${raw}`);
            await new Promise<void>((r) => {
              waiters.push(r);
              setTimeout(r, 200);
            });
          }
        },
      });
    });
    if (payload) req.write(payload);
    req.end();
  });
}

/**
 * Waits until an event the check accepts has arrived on a live stream.
 * @param stream the stream.
 * @param pred the check.
 * @param timeoutMs how long to wait.
 */
export async function waitForEvent(
  stream: LiveStream,
  pred: (e: SseEvent) => boolean,
  timeoutMs = 60_000
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!stream.events.some(pred)) {
    if (Date.now() > deadline) throw new Error(`event not seen; got:\n${stream.raw}`);
    await stream.waitFor(stream.events.length + 1, timeoutMs);
  }
}
