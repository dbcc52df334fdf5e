/**
 * The client of remote MCP servers [docs/decisions.md "MCP server instances"]: the official SDK's Client over its
 * StreamableHTTPClientTransport, whose every HTTP request goes through {@link safeFetch} (docs/architecture.md §8):
 * https only, the address checked at connect time (lib/safeDestination.ts, WEBHOOK_ALLOW_PRIVATE as for
 * webhooks), no redirects, the answer's body capped. Each operation connects, does its one thing and closes, all
 * within one time limit. {@link listTools} and {@link callTool} never throw: they answer a typed failure, in the
 * service's words, that the caller shows (reachability) or gives the model (a tool error result).
 */
import https from 'node:https';
import { readFileSync } from 'node:fs';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { FetchLike } from '@modelcontextprotocol/sdk/shared/transport.js';
import { assertSafeUrl, safeLookup, UnsafeDestinationError, type Resolver } from './safeDestination';
import { requestIdHeaders } from './requestContext';

/** Where a server is and what every request to it carries. */
export interface McpEndpoint {
  url: string;
  /** Headers sent with every request (an `Authorization`, say), in clear. */
  headers: Record<string, string>;
}

/** The limits and trust of every exchange. */
export interface McpClientOptions {
  /** Private and loopback destinations allowed (WEBHOOK_ALLOW_PRIVATE). */
  allowPrivate: boolean;
  /** One operation's whole time: connect, initialize, the request, close. */
  timeoutMs: number;
  /** The most bytes of one HTTP answer read; a larger answer fails the operation. */
  maxResponseBytes: number;
  /** An extra CA bundle (PEM file) trusted besides the system's (MCP_CA_FILE). */
  caFile?: string;
  /** Injectable resolver (tests). */
  resolver?: Resolver;
  /** Aborts the operation (an execution's cancel: lib/runningCalls.ts); it then fails as timed out. */
  signal?: AbortSignal;
}

/** Why an operation failed. */
export type McpFailureReason =
  /** The destination is refused (not https, private address…). */
  | 'unsafe_destination'
  /** No connection, or the server answered an HTTP error. */
  | 'unreachable'
  /** The server did not finish within the time limit. */
  | 'timeout'
  /** The server answered more than the size cap. */
  | 'too_large'
  /** The server answered something that is not MCP, or a JSON-RPC error. */
  | 'protocol';

export interface McpFailure {
  ok: false;
  reason: McpFailureReason;
  /** In the service's words (the server's own words only where they explain a JSON-RPC error). */
  message: string;
  /** Why a destination was refused, for the log only (`message` is the same for every refused host name). */
  detail?: string;
}

/** A tool as the server lists it. */
export interface McpToolInfo {
  name: string;
  description: string;
  inputSchema: Record<string, unknown>;
}

/** A tool call's answer, its content blocks as text. */
export interface McpCallResult {
  ok: true;
  /** The text of its content blocks, one after the other (non-text blocks described, never decoded). */
  text: string;
  /** The tool said the call failed (`isError`). */
  isError: boolean;
}

/** Thrown inside the fetch, turned into a failure by {@link run}. */
class McpFetchError extends Error {
  constructor(
    readonly reason: McpFailureReason,
    message: string,
    readonly detail?: string
  ) {
    super(message);
  }
}

const NULL_BODY_STATUSES = new Set([101, 204, 205, 304]);

const caCache = new Map<string, Buffer>();
function extraCa(file: string | undefined): Buffer[] | undefined {
  if (!file) return undefined;
  let ca = caCache.get(file);
  if (!ca) {
    ca = readFileSync(file);
    caCache.set(file, ca);
  }
  return [ca];
}

function headersOf(init: RequestInit | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  new Headers(init?.headers).forEach((value, key) => {
    out[key] = value;
  });
  return out;
}

function bodyOf(body: RequestInit['body']): Buffer | undefined {
  if (body === undefined || body === null) return undefined;
  if (typeof body === 'string') return Buffer.from(body, 'utf8');
  if (body instanceof ArrayBuffer) return Buffer.from(body);
  if (ArrayBuffer.isView(body)) return Buffer.from(body.buffer, body.byteOffset, body.byteLength);
  throw new McpFetchError('protocol', 'Unsupported request body');
}

/**
 * A fetch for the SDK's transport that honours the destination rules: the URL's form checked, the socket's
 * address checked at connect time, a redirect refused (never followed), the answer's body cut at the cap (the
 * stream then errors), the extra CA trusted. The request is aborted by `init.signal`.
 * @param options allowPrivate, the response cap, the CA, the resolver.
 * @returns the fetch.
 */
export function safeFetch(options: McpClientOptions): FetchLike {
  return (input, init) => {
    let url: URL;
    try {
      url = assertSafeUrl(String(input), { allowPrivate: options.allowPrivate });
    } catch (err) {
      return Promise.reject(new McpFetchError('unsafe_destination', (err as Error).message));
    }
    const body = bodyOf(init?.body);
    return new Promise<Response>((resolve, reject) => {
      const req = https.request(url, {
        method: init?.method ?? 'GET',
        headers: {
          ...requestIdHeaders(),
          ...headersOf(init),
          ...(body ? { 'content-length': String(body.length) } : {}),
        },
        lookup: safeLookup({ allowPrivate: options.allowPrivate, resolver: options.resolver }) as never,
        ca: extraCa(options.caFile),
        agent: false,
        signal: init?.signal ?? undefined,
      });
      req.on('error', (err) => {
        if (err instanceof UnsafeDestinationError)
          reject(new McpFetchError('unsafe_destination', err.message, err.detail));
        else if ((err as Error).name === 'AbortError') reject(err);
        else
          reject(
            new McpFetchError('unreachable', `Network error: ${(err as NodeJS.ErrnoException).code ?? err.message}`)
          );
      });
      req.on('response', (res) => {
        const status = res.statusCode ?? 0;
        if (status >= 300 && status < 400) {
          res.destroy();
          reject(new McpFetchError('unreachable', `The server answered a redirect (${status}), which is not followed`));
          return;
        }
        const headers = new Headers();
        for (const [k, v] of Object.entries(res.headers)) {
          if (Array.isArray(v)) v.forEach((x) => headers.append(k, x));
          else if (v !== undefined) headers.set(k, v);
        }
        let read = 0;
        const stream = new ReadableStream<Uint8Array>({
          start(controller) {
            res.on('data', (chunk: Buffer) => {
              read += chunk.length;
              if (read > options.maxResponseBytes) {
                res.destroy();
                controller.error(
                  new McpFetchError('too_large', `The server answered more than ${options.maxResponseBytes} bytes`)
                );
                return;
              }
              controller.enqueue(new Uint8Array(chunk));
            });
            res.on('end', () => {
              try {
                controller.close();
              } catch {
                // already errored
              }
            });
            res.on('error', (err) => {
              try {
                controller.error(err);
              } catch {
                // already closed
              }
            });
          },
          cancel() {
            res.destroy();
          },
        });
        resolve(new Response(NULL_BODY_STATUSES.has(status) ? null : stream, { status, headers }));
      });
      req.end(body);
    });
  };
}

/** What {@link run} hands the operation: a connected client. */
type Operation<T> = (client: Client, signal: AbortSignal) => Promise<T>;

/**
 * Connects, runs one operation and closes, within the time limit; every failure becomes an {@link McpFailure}.
 * @param endpoint the server.
 * @param options limits and trust.
 * @param op the operation.
 * @returns its value, or the failure.
 */
async function run<T>(
  endpoint: McpEndpoint,
  options: McpClientOptions,
  op: Operation<T>
): Promise<{ ok: true; value: T } | McpFailure> {
  const abort = new AbortController();
  const stop = (): void => abort.abort();
  options.signal?.addEventListener('abort', stop, { once: true });
  if (options.signal?.aborted) abort.abort();
  let fetchFailure: McpFetchError | undefined;
  const baseFetch = safeFetch(options);
  const fetch: FetchLike = async (url, init) => {
    try {
      return await baseFetch(url, {
        ...init,
        signal: AbortSignal.any([abort.signal, ...(init?.signal ? [init.signal] : [])]),
      });
    } catch (err) {
      if (err instanceof McpFetchError) fetchFailure ??= err;
      throw err;
    }
  };
  const client = new Client({ name: 'agent-automation-service', version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(new URL(endpoint.url), {
    fetch,
    requestInit: { headers: endpoint.headers },
    // No reconnection of the server's event stream: an operation is one exchange.
    reconnectionOptions: {
      maxRetries: 0,
      initialReconnectionDelay: 1000,
      maxReconnectionDelay: 1000,
      reconnectionDelayGrowFactor: 1,
    },
  });
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<McpFailure>((resolve) => {
    timer = setTimeout(() => {
      abort.abort();
      resolve({
        ok: false,
        reason: 'timeout',
        message: `The MCP server did not answer within ${options.timeoutMs} ms`,
      });
    }, options.timeoutMs);
  });
  const work = (async (): Promise<{ ok: true; value: T } | McpFailure> => {
    try {
      await client.connect(transport, { timeout: options.timeoutMs, signal: abort.signal });
      const value = await op(client, abort.signal);
      // The session ends with the operation (a server without sessions answers 405, which is fine).
      await transport.terminateSession().catch(() => undefined);
      return { ok: true, value };
    } catch (err) {
      if (abort.signal.aborted) return { ok: false, reason: 'timeout', message: 'timed out' };
      if (fetchFailure)
        return {
          ok: false,
          reason: fetchFailure.reason,
          message: fetchFailure.message,
          ...(fetchFailure.detail ? { detail: fetchFailure.detail } : {}),
        };
      return { ok: false, ...describe(err) };
    }
  })();
  try {
    return await Promise.race([work, timedOut]);
  } finally {
    clearTimeout(timer);
    options.signal?.removeEventListener('abort', stop);
    abort.abort();
    await client.close().catch(() => undefined);
  }
}

/** @returns the reason and message of an error the SDK threw. */
function describe(err: unknown): Pick<McpFailure, 'reason' | 'message'> {
  const e = err as { code?: unknown; message?: string; name?: string };
  const text = (e.message ?? String(err)).slice(0, 300);
  // The transport's HTTP errors (StreamableHTTPError) carry the status as `code`.
  if (e.name === 'StreamableHTTPError' || /^Error POSTing|^Failed to open SSE/.test(text))
    return { reason: 'unreachable', message: `The MCP server answered an error: ${text}` };
  if (e.name === 'UnauthorizedError')
    return { reason: 'unreachable', message: 'The MCP server refused the credentials (401)' };
  if (typeof e.code === 'number') return { reason: 'protocol', message: `The MCP server answered an error: ${text}` };
  return { reason: 'protocol', message: `The MCP exchange failed: ${text}` };
}

/** Most tools of one server read (pages of the listing followed up to it). */
export const MAX_LISTED_TOOLS = 200;

/**
 * Lists a server's tools (every page, up to {@link MAX_LISTED_TOOLS}).
 * @param endpoint the server.
 * @param options limits and trust.
 * @returns the tools, or why they could not be listed; never throws.
 */
export async function listTools(
  endpoint: McpEndpoint,
  options: McpClientOptions
): Promise<{ ok: true; tools: McpToolInfo[] } | McpFailure> {
  const out = await run(endpoint, options, async (client, signal) => {
    const tools: McpToolInfo[] = [];
    let cursor: string | undefined;
    do {
      const page = await client.listTools(cursor ? { cursor } : undefined, { timeout: options.timeoutMs, signal });
      for (const t of page.tools)
        tools.push({
          name: t.name,
          description: t.description ?? '',
          inputSchema: t.inputSchema as Record<string, unknown>,
        });
      cursor = page.nextCursor;
    } while (cursor && tools.length < MAX_LISTED_TOOLS);
    return tools.slice(0, MAX_LISTED_TOOLS);
  });
  return out.ok ? { ok: true, tools: out.value } : out;
}

/**
 * Calls one tool.
 * @param endpoint the server.
 * @param name the tool's name on the server.
 * @param args its arguments.
 * @param options limits and trust.
 * @returns its content as text and whether the tool reported an error, or why the call failed; never throws.
 */
export async function callTool(
  endpoint: McpEndpoint,
  name: string,
  args: Record<string, unknown>,
  options: McpClientOptions
): Promise<McpCallResult | McpFailure> {
  const out = await run(endpoint, options, async (client, signal) =>
    client.callTool({ name, arguments: args }, undefined, { timeout: options.timeoutMs, signal })
  );
  if (!out.ok) return out;
  const result = out.value as {
    content?: Array<Record<string, unknown>>;
    structuredContent?: unknown;
    toolResult?: unknown;
    isError?: boolean;
  };
  const parts = (result.content ?? []).map(blockText);
  if (parts.length === 0 && result.structuredContent !== undefined)
    parts.push(JSON.stringify(result.structuredContent));
  if (parts.length === 0 && result.toolResult !== undefined) parts.push(JSON.stringify(result.toolResult));
  return { ok: true, text: parts.join('\n'), isError: result.isError === true };
}

/** @returns a content block as text: its text, a text resource's text, else a one-line description. */
function blockText(block: Record<string, unknown>): string {
  switch (block.type) {
    case 'text':
      return String(block.text ?? '');
    case 'resource': {
      const r = (block.resource ?? {}) as { uri?: string; text?: string; mimeType?: string };
      return typeof r.text === 'string' ? r.text : `[resource ${r.uri ?? ''} (${r.mimeType ?? 'binary'}) not shown]`;
    }
    case 'resource_link':
      return `[resource link ${String(block.uri ?? '')}]`;
    default:
      return `[${String(block.type)} content (${String(block.mimeType ?? 'unknown type')}) not shown]`;
  }
}
