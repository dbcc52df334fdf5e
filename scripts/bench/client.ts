/**
 * The benchmark's HTTP client for the v1 api: JSON calls and execution event streams over node:http with a
 * keep-alive agent, so the figures measure the platform and not connection set-up or a fetch layer. Streams are
 * parsed with eventsource-parser as bytes arrive, and every step is time-stamped with performance.now().
 */
import http from 'node:http';
import { performance } from 'node:perf_hooks';
import { createParser } from 'eventsource-parser';

/** A JSON response. */
export interface JsonResponse<T> {
  status: number;
  body: T;
  /** The response's headers (`retry-after` of a 503). */
  headers?: http.IncomingHttpHeaders;
}

/** What a streamed execution reports, with performance.now() time stamps. */
export interface ExecutionStream {
  /** When the request was handed to the socket layer. */
  readonly sentAt: number;
  /** The `meta` event (written by the api before it starts the workflow): execution id and arrival time. */
  readonly meta: Promise<{ executionId: string; at: number }>;
  /** Time of the first text delta (`message` event with `messageType: stream_event`). */
  readonly firstDelta: Promise<number>;
  /** Resolves when the server ended the response; rejects on a transport error, a non-200 or the timeout. */
  readonly ended: Promise<{ at: number; lastEvent?: string; deltas: number }>;
  /** Disconnects. */
  close(): void;
}

interface Deferred<T> {
  promise: Promise<T>;
  resolve(value: T): void;
  reject(err: unknown): void;
}

function deferred<T>(): Deferred<T> {
  let resolve!: (value: T) => void;
  let reject!: (err: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  // A stream that is cancelled before its first delta rejects `firstDelta` with nobody listening: that is not a
  // crash, so every deferred counts as handled; awaiting it still sees the rejection.
  promise.catch(() => undefined);
  return { promise, resolve, reject };
}

/** A v1 api client bound to one token. */
export class ApiClient {
  // Enough sockets for the throughput run's concurrency plus the streams that are still closing.
  private readonly agent = new http.Agent({ keepAlive: true, maxSockets: 64 });

  /**
   * @param baseUrl e.g. http://127.0.0.1:PORT
   * @param token a `td_` token.
   */
  constructor(
    readonly baseUrl: string,
    private readonly token: string
  ) {}

  /**
   * Sends a JSON request and reads the JSON reply (any status).
   * @param method HTTP method.
   * @param path path under the base address.
   * @param body JSON body.
   * @param timeoutMs the whole exchange's limit.
   * @returns status and parsed body.
   */
  json<T>(method: string, path: string, body?: object, timeoutMs = 30_000): Promise<JsonResponse<T>> {
    return new Promise((resolve, reject) => {
      const payload = body === undefined ? undefined : JSON.stringify(body);
      const req = http.request(new URL(path, this.baseUrl), {
        method,
        agent: this.agent,
        headers: this.headers('application/json', payload),
      });
      const timer = setTimeout(
        () => req.destroy(new Error(`${method} ${path} timed out after ${timeoutMs} ms`)),
        timeoutMs
      );
      req.on('error', (err) => {
        clearTimeout(timer);
        reject(err);
      });
      req.on('response', (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (text += chunk));
        res.on('error', reject);
        res.on('end', () => {
          clearTimeout(timer);
          try {
            resolve({ status: res.statusCode ?? 0, body: (text ? JSON.parse(text) : {}) as T, headers: res.headers });
          } catch {
            reject(
              new Error(`${method} ${path}: ${res.statusCode} with a body that is not JSON: ${text.slice(0, 200)}`)
            );
          }
        });
      });
      req.end(payload);
    });
  }

  /**
   * Starts a streamed execution (`stream: true`) and parses its events as they arrive.
   * @param agentId the agent.
   * @param message the user message.
   * @param timeoutMs limit for the whole stream.
   * @param extraHeaders more request headers (e.g. a `traceparent`: scripts/bench/trace.ts).
   * @returns the live stream.
   */
  streamExecution(
    agentId: string,
    message: string,
    timeoutMs = 60_000,
    extraHeaders: http.OutgoingHttpHeaders = {}
  ): ExecutionStream {
    const meta = deferred<{ executionId: string; at: number }>();
    const firstDelta = deferred<number>();
    const ended = deferred<{ at: number; lastEvent?: string; deltas: number }>();
    const payload = JSON.stringify({ message, stream: true });
    const path = `/api/v1/agents/${agentId}/execute`;
    const req = http.request(new URL(path, this.baseUrl), {
      method: 'POST',
      agent: this.agent,
      headers: { ...this.headers('text/event-stream', payload), ...extraHeaders },
    });
    let lastEvent: string | undefined;
    let deltas = 0;
    const fail = (err: unknown): void => {
      clearTimeout(timer);
      for (const d of [meta, firstDelta, ended]) d.reject(err);
    };
    const timer = setTimeout(() => req.destroy(new Error(`stream timed out after ${timeoutMs} ms`)), timeoutMs);
    req.on('error', fail);
    req.on('response', (res) => {
      res.setEncoding('utf8');
      if (res.statusCode !== 200) {
        let text = '';
        res.on('data', (chunk: string) => (text += chunk));
        res.on('end', () => fail(new Error(`POST ${path}: ${res.statusCode} ${text.slice(0, 300)}`)));
        return;
      }
      const parser = createParser({
        onEvent: (e) => {
          const at = performance.now();
          lastEvent = e.event;
          const data = JSON.parse(e.data) as { executionId?: string; messageType?: string };
          if (e.event === 'meta' && data.executionId) meta.resolve({ executionId: data.executionId, at });
          if (e.event === 'message' && data.messageType === 'stream_event') {
            if (deltas === 0) firstDelta.resolve(at);
            deltas++;
          }
        },
      });
      res.on('data', (chunk: string) => parser.feed(chunk));
      res.on('error', fail);
      res.on('end', () => {
        clearTimeout(timer);
        const at = performance.now();
        const incomplete = new Error(`stream ended (last event: ${lastEvent ?? 'none'}) before this point`);
        meta.reject(incomplete);
        firstDelta.reject(incomplete);
        ended.resolve({ at, lastEvent, deltas });
      });
    });
    const sentAt = performance.now();
    req.end(payload);
    return {
      sentAt,
      meta: meta.promise,
      firstDelta: firstDelta.promise,
      ended: ended.promise,
      close: () => req.destroy(),
    };
  }

  /** Closes the idle keep-alive sockets. */
  close(): void {
    this.agent.destroy();
  }

  private headers(accept: string, payload: string | undefined): http.OutgoingHttpHeaders {
    return {
      accept,
      authorization: `Bearer ${this.token}`,
      ...(payload === undefined
        ? {}
        : { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) }),
    };
  }
}
