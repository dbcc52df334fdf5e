/**
 * A fake Anthropic Messages API for tests and benchmarks (scripts/bench): a real HTTP server on 127.0.0.1 (random port) that answers
 * `POST /v1/messages` the way the real API does, with the real streaming SSE events, so the official SDK runs
 * unmodified against it (give it `baseURL: fake.url`).
 *
 * The reply depends only on the request. By default it is `Echo: <last user message text>`, streamed in chunks of
 * 4 characters. Directives anywhere in the last user message change that:
 *
 * - `[chunks:N]`      the reply is N chunks `tok1 `, `tok2 `, … `tokN ` (instead of the echo).
 * - `[slow:MS]`       wait MS milliseconds between chunks.
 * - `[whole]`         send the reply after `message_start` (its deltas and its end) in one write, so the client gets
 *                     it whole, at once (a reply that is in the client's hands before it could write any of it).
 * - `[fail:STATUS]`   answer HTTP STATUS with an Anthropic error body (`api_error`) before any output.
 * - `[fail-times:K]`  with `[fail:…]`: fail only the first K requests carrying this exact message text, then
 *                     succeed (counted per distinct message text, over the server's lifetime).
 * - `[fail-after:K]`  stream K deltas, then an `event: error` (`overloaded_error`) and end the response.
 * - `[hang]`          send `message_start`, then nothing more until the client disconnects (a silent model).
 * - `[hang-after:K]`  stream K deltas, then nothing more until the client disconnects (silent mid-reply).
 * - `[tool:NAME {JSON}]` answer with a `tool_use` block calling tool NAME with that input (a JSON object on one
 *                     line, without `]`), after the text `Using tools.`; several directives make several calls in
 *                     one reply (`stop_reason: tool_use`). The next request, whose last user message carries the
 *                     `tool_result` blocks, is answered `Tool results: <content> | <content> …` (the directives of
 *                     the first user message, `[slow:MS]` and the failures, still apply to it).
 *
 * Prefill: when the request's last message is an assistant message P, the reply R is still computed from the last
 * user message; if R starts with P with its trailing whitespace trimmed, only the rest of R is streamed, like a
 * real model continuing its own answer. Otherwise R is streamed whole.
 *
 * Usage: `input_tokens` = ceil(characters of the system prompt and all message texts / 4); `output_tokens` = the
 * number of chunks streamed.
 *
 * Requests without a key get 401: an `x-api-key` header, or `Authorization: Bearer <key>`, which is how the
 * installed SDK (1.x) sends `apiKey`. Unknown paths get 404. Both with Anthropic error bodies.
 * `stream: false` gets the whole reply as one Message object.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

/** A running fake. */
export interface FakeAnthropic {
  /** Base address to give the SDK as `baseURL`, e.g. `http://127.0.0.1:PORT`. */
  readonly url: string;
  /** Parsed JSON bodies of the `/v1/messages` requests received, in order. */
  readonly requests: FakeMessagesRequest[];
  /**
   * What each request of `requests` (same index) was billed so far: its input tokens, and one output token per
   * text delta actually sent (also for a response cut short).
   */
  readonly usage: FakeUsage[];
  /** Requests whose response is still open. */
  readonly activeConnections: number;
  /** Requests whose client disconnected before the response ended. */
  readonly aborted: number;
  /** Stops the server, dropping open connections. */
  close(): Promise<void>;
}

/** Tokens billed for one request. */
export interface FakeUsage {
  inputTokens: number;
  outputTokens: number;
}

/** A content block of a request message the fake reads (text, tool_use, tool_result). */
export interface FakeBlock {
  type: string;
  text?: string;
  content?: string | { type: string; text?: string }[];
  tool_use_id?: string;
  [key: string]: unknown;
}

/** The part of a Messages request body the fake reads. */
export interface FakeMessagesRequest {
  model?: string;
  max_tokens?: number;
  system?: string | { type: string; text?: string }[];
  messages?: { role: string; content: string | FakeBlock[] }[];
  stream?: boolean;
  [key: string]: unknown;
}

/** Characters per chunk of the default echo reply. */
const ECHO_CHUNK_CHARS = 4;

/**
 * @param content a message's or the system prompt's content.
 * @returns its text (text blocks joined).
 */
function textOf(content: string | FakeBlock[] | undefined): string {
  if (content === undefined) return '';
  if (typeof content === 'string') return content;
  return content.map((b) => (b.type === 'text' ? (b.text ?? '') : '')).join('');
}

/**
 * @param text the last user message.
 * @param name a directive name.
 * @returns the directive's number, or undefined when absent.
 */
function numberDirective(text: string, name: string): number | undefined {
  const m = new RegExp(`\\[${name}:(\\d+)\\]`).exec(text);
  return m ? Number(m[1]) : undefined;
}

/**
 * @param text the last user message.
 * @returns the `[tool:NAME {JSON}]` calls it asks for.
 */
function toolDirectives(text: string): { name: string; input: Record<string, unknown> }[] {
  return [...text.matchAll(/\[tool:([A-Za-z0-9_-]+) (\{[^\]]*\})\]/g)].map((m) => ({
    name: m[1],
    input: JSON.parse(m[2]) as Record<string, unknown>,
  }));
}

/** @returns the text of tool_result blocks, when the message carries any. */
function toolResultsOf(content: string | FakeBlock[] | undefined): string[] | undefined {
  if (!Array.isArray(content)) return undefined;
  const results = content.filter((b) => b.type === 'tool_result');
  if (results.length === 0) return undefined;
  return results.map((b) => (typeof b.content === 'string' ? b.content : textOf(b.content as FakeBlock[])));
}

/**
 * @param text the last user message.
 * @param toolResults the tool results the last user message carries, if any.
 * @returns the full reply's chunks.
 */
function replyChunks(text: string, toolResults?: string[]): string[] {
  const n = numberDirective(text, 'chunks');
  if (toolResults === undefined && n !== undefined) return Array.from({ length: n }, (_, i) => `tok${i + 1} `);
  const reply =
    toolResults !== undefined
      ? `Tool results: ${toolResults.join(' | ')}`
      : toolDirectives(text).length > 0
        ? 'Using tools.'
        : `Echo: ${text}`;
  const chunks: string[] = [];
  for (let i = 0; i < reply.length; i += ECHO_CHUNK_CHARS) chunks.push(reply.slice(i, i + ECHO_CHUNK_CHARS));
  return chunks;
}

/**
 * Drops the first `skip` characters from a chunk list, keeping the chunk boundaries after them.
 * @param chunks the full reply's chunks.
 * @param skip characters already present in the prefill.
 * @returns the chunks still to stream.
 */
function dropPrefix(chunks: string[], skip: number): string[] {
  const out: string[] = [];
  for (const chunk of chunks) {
    if (skip >= chunk.length) {
      skip -= chunk.length;
      continue;
    }
    out.push(chunk.slice(skip));
    skip = 0;
  }
  return out;
}

/**
 * @param res the response.
 * @param status HTTP status.
 * @param type Anthropic error type.
 * @param message error message.
 */
function sendError(res: http.ServerResponse, status: number, type: string, message: string): void {
  res.writeHead(status, { 'content-type': 'application/json', 'request-id': 'req_fake' });
  res.end(JSON.stringify({ type: 'error', error: { type, message } }));
}

/**
 * Starts a fake Anthropic server.
 * @param host the address it listens on (default loopback; the multi-host test bed gives its bridge address).
 * @returns the running fake.
 */
export async function startFakeAnthropic(host = '127.0.0.1'): Promise<FakeAnthropic> {
  const requests: FakeMessagesRequest[] = [];
  const usage: FakeUsage[] = [];
  const failures = new Map<string, number>();
  const open = new Set<http.ServerResponse>();
  let aborted = 0;
  let nextId = 1;

  const server = http.createServer((req, res) => {
    void handle(req, res).catch((err: unknown) => {
      if (!res.headersSent) sendError(res, 500, 'api_error', String(err));
      else res.destroy();
    });
  });

  async function handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const path = (req.url ?? '/').split('?')[0];
    if (req.method !== 'POST' || path !== '/v1/messages') {
      sendError(res, 404, 'not_found_error', `Not found: ${req.method} ${path}`);
      return;
    }
    // SDK 1.x sends the key as `Authorization: Bearer …`; older SDKs and curl examples use `x-api-key`.
    if (!req.headers['x-api-key'] && !/^Bearer \S/.test(req.headers.authorization ?? '')) {
      sendError(res, 401, 'authentication_error', 'x-api-key or Authorization: Bearer header is required');
      return;
    }
    let body: FakeMessagesRequest;
    try {
      body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as FakeMessagesRequest;
    } catch {
      sendError(res, 400, 'invalid_request_error', 'Body is not valid JSON');
      return;
    }
    requests.push(body);
    const billed: FakeUsage = { inputTokens: 0, outputTokens: 0 };
    usage.push(billed);

    const messages = body.messages ?? [];
    // Directives come from the last user message with text; a last user message of tool results is answered
    // with them (see the header).
    const lastUserMessage = [...messages].reverse().find((m) => m.role === 'user');
    const toolResults = toolResultsOf(lastUserMessage?.content);
    const lastUser = textOf(
      [...messages].reverse().find((m) => m.role === 'user' && textOf(m.content) !== '')?.content
    );
    const toolCalls = toolResults === undefined ? toolDirectives(lastUser) : [];
    const last = messages[messages.length - 1];
    const prefill = last?.role === 'assistant' ? textOf(last.content).trimEnd() : '';

    const failStatus = numberDirective(lastUser, 'fail');
    if (failStatus !== undefined) {
      const times = numberDirective(lastUser, 'fail-times');
      const seen = failures.get(lastUser) ?? 0;
      failures.set(lastUser, seen + 1);
      if (times === undefined || seen < times) {
        sendError(res, failStatus, 'api_error', `Injected failure ${failStatus}`);
        return;
      }
    }

    const full = replyChunks(lastUser, toolResults);
    const fullText = full.join('');
    const toStream = prefill !== '' && fullText.startsWith(prefill) ? dropPrefix(full, prefill.length) : full;
    const allText = textOf(body.system) + messages.map((m) => textOf(m.content)).join('');
    const inputTokens = Math.ceil(allText.length / 4);
    billed.inputTokens = inputTokens;
    const id = `msg_fake_${nextId++}`;
    const model = body.model ?? 'unknown';

    if (!body.stream) {
      billed.outputTokens = toStream.length;
      res.writeHead(200, { 'content-type': 'application/json', 'request-id': 'req_fake' });
      res.end(
        JSON.stringify({
          id,
          type: 'message',
          role: 'assistant',
          model,
          content: [
            { type: 'text', text: toStream.join('') },
            ...toolCalls.map((c, i) => ({
              type: 'tool_use',
              id: `toolu_fake_${id}_${i}`,
              name: c.name,
              input: c.input,
            })),
          ],
          stop_reason: toolCalls.length > 0 ? 'tool_use' : 'end_turn',
          stop_sequence: null,
          usage: { input_tokens: inputTokens, output_tokens: toStream.length },
        })
      );
      return;
    }

    open.add(res);
    let disconnected = false;
    res.on('close', () => {
      open.delete(res);
      if (!res.writableFinished) {
        disconnected = true;
        aborted++;
      }
    });
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', 'request-id': 'req_fake' });
    // [whole]: what follows `message_start` is gathered here and written at once before the end (not `res.cork()`:
    // with it, a client on Node 24 received nothing after `message_start`).
    let gathered: string[] | undefined;
    const send = (event: string, data: object): void => {
      const text = `event: ${event}\ndata: ${JSON.stringify({ type: event, ...data })}\n\n`;
      if (gathered) gathered.push(text);
      else if (!disconnected) res.write(text);
    };
    const end = (): void => {
      if (disconnected) return;
      if (gathered) res.write(gathered.join(''));
      res.end();
    };

    send('message_start', {
      message: {
        id,
        type: 'message',
        role: 'assistant',
        model,
        content: [],
        stop_reason: null,
        stop_sequence: null,
        usage: { input_tokens: inputTokens, output_tokens: 1 },
      },
    });
    // [hang]: leave the response open; the 'close' handler counts the client's disconnect.
    if (/\[hang\]/.test(lastUser)) return;

    const slowMs = numberDirective(lastUser, 'slow') ?? 0;
    const failAfter = numberDirective(lastUser, 'fail-after');
    const hangAfter = numberDirective(lastUser, 'hang-after');
    // [whole]: one write.
    if (/\[whole\]/.test(lastUser) && slowMs === 0 && hangAfter === undefined) gathered = [];
    send('content_block_start', { index: 0, content_block: { type: 'text', text: '' } });
    send('ping', {});
    for (let i = 0; i < toStream.length; i++) {
      if (failAfter !== undefined && i >= failAfter) break;
      // [hang-after:K]: leave the response open after K deltas, like [hang].
      if (hangAfter !== undefined && i >= hangAfter) return;
      if (i > 0 && slowMs > 0) await new Promise((r) => setTimeout(r, slowMs));
      if (disconnected) return;
      send('content_block_delta', { index: 0, delta: { type: 'text_delta', text: toStream[i] } });
      billed.outputTokens++;
    }
    if (failAfter !== undefined) {
      send('error', { error: { type: 'overloaded_error', message: 'Overloaded' } });
      end();
      return;
    }
    send('content_block_stop', { index: 0 });
    toolCalls.forEach((c, i) => {
      const index = i + 1;
      send('content_block_start', {
        index,
        content_block: { type: 'tool_use', id: `toolu_fake_${id}_${i}`, name: c.name, input: {} },
      });
      // The input as the real API streams it: JSON in pieces.
      const json = JSON.stringify(c.input);
      const half = Math.ceil(json.length / 2);
      for (const part of [json.slice(0, half), json.slice(half)])
        send('content_block_delta', { index, delta: { type: 'input_json_delta', partial_json: part } });
      send('content_block_stop', { index });
    });
    send('message_delta', {
      delta: { stop_reason: toolCalls.length > 0 ? 'tool_use' : 'end_turn', stop_sequence: null },
      usage: { output_tokens: toStream.length },
    });
    send('message_stop', {});
    end();
  }

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, host, () => resolve());
  });
  const { port } = server.address() as AddressInfo;

  return {
    url: `http://${host}:${port}`,
    requests,
    usage,
    get activeConnections() {
      return open.size;
    },
    get aborted() {
      return aborted;
    },
    close: () =>
      new Promise<void>((resolve, reject) => {
        for (const res of open) res.destroy();
        server.close((err) => (err ? reject(err) : resolve()));
        // Keep-alive sockets of finished requests would otherwise hold close() open.
        server.closeAllConnections();
      }),
  };
}
