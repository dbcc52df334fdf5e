import http from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  createAnthropicProvider,
  createBuiltinProvider,
  createOpenAIProvider,
  createProvider,
  DEFAULT_ANTHROPIC_MODEL,
  DEFAULT_OPENAI_MODEL,
  NO_PROVIDER_NOTE,
  ProviderAbortedError,
  ProviderError,
  resolveModel,
} from '../../lib/providers';
import type { ModelEvent, ModelProvider, ModelRequest, ResolvedModel } from '../../lib/providers';
import { startFakeAnthropic, type FakeAnthropic } from '../../scripts/fakes/anthropic';
import { until } from '../helpers/until';

/** Everything a stream yielded, or the error it ended with. */
interface Collected {
  events: ModelEvent[];
  texts: string[];
  text: string;
  inputTokens?: number;
  outputTokens?: number;
  error?: unknown;
}

/**
 * Drains a provider stream.
 * @param provider the provider.
 * @param req the request.
 * @param onEvent called after each event (e.g. to abort mid-stream).
 * @returns what was yielded, and the error if the stream threw.
 */
async function collect(
  provider: ModelProvider,
  req: ModelRequest,
  onEvent?: (e: ModelEvent, c: Collected) => void
): Promise<Collected> {
  const c: Collected = { events: [], texts: [], text: '' };
  try {
    for await (const e of provider.stream(req)) {
      c.events.push(e);
      if (e.type === 'text') {
        c.texts.push(e.text);
        c.text += e.text;
      } else if (e.type === 'usage') {
        if (e.inputTokens !== undefined) c.inputTokens = e.inputTokens;
        if (e.outputTokens !== undefined) c.outputTokens = e.outputTokens;
      }
      onEvent?.(e, c);
    }
  } catch (err) {
    c.error = err;
  }
  return c;
}

/**
 * @param last the new user message.
 * @param extra fields to override.
 * @returns a request with a fresh signal.
 */
function request(last: string, extra: Partial<ModelRequest> = {}): ModelRequest {
  return {
    model: 'claude-test',
    system: 'You are terse.',
    messages: [{ role: 'user', content: last }],
    maxTokens: 256,
    signal: new AbortController().signal,
    ...extra,
  };
}

/** Checks every 10 ms, for up to 2 s, until the condition holds. */
const holds = (cond: () => boolean): Promise<boolean> => until(async () => cond(), Boolean, 2000, 10);

describe('Anthropic provider (real SDK against the fake server)', () => {
  let fake: FakeAnthropic;
  let provider: ModelProvider;

  beforeAll(async () => {
    fake = await startFakeAnthropic();
    provider = createAnthropicProvider({ apiKey: 'test-key', baseURL: fake.url });
  });
  afterAll(async () => {
    await fake.close();
  });

  it('streams the text deltas and the usage', async () => {
    const req = request('what is up', {
      messages: [
        { role: 'user', content: 'hello' },
        { role: 'assistant', content: 'hi there' },
        { role: 'user', content: 'what is up' },
      ],
    });
    const c = await collect(provider, req);
    expect(c.error).toBeUndefined();
    expect(provider.name).toBe('anthropic');
    expect(c.text).toBe('Echo: what is up');
    expect(c.texts).toEqual(['Echo', ': wh', 'at i', 's up']);
    const chars = 'You are terse.'.length + 'hello'.length + 'hi there'.length + 'what is up'.length;
    expect(c.inputTokens).toBe(Math.ceil(chars / 4));
    expect(c.outputTokens).toBe(4);
    // Input usage first (message_start), output usage last (message_delta).
    expect(c.events[0]).toEqual({ type: 'usage', inputTokens: Math.ceil(chars / 4) });
    expect(c.events[c.events.length - 1]).toEqual({ type: 'usage', outputTokens: 4 });
  });

  it('sends the model, system prompt, history and max_tokens', async () => {
    const before = fake.requests.length;
    await collect(
      provider,
      request('second', {
        system: 'Be kind.',
        messages: [
          { role: 'user', content: 'first' },
          { role: 'assistant', content: 'ok' },
          { role: 'user', content: 'second' },
        ],
        maxTokens: 99,
      })
    );
    expect(fake.requests.length).toBe(before + 1);
    expect(fake.requests[before]).toMatchObject({
      model: 'claude-test',
      max_tokens: 99,
      system: 'Be kind.',
      stream: true,
      messages: [
        { role: 'user', content: 'first' },
        { role: 'assistant', content: 'ok' },
        { role: 'user', content: 'second' },
      ],
    });
  });

  it('continues a prefill ending in whitespace without repeating it', async () => {
    const prefill = 'Echo: tell ';
    const c = await collect(provider, request('tell me a story', { prefill }));
    expect(c.error).toBeUndefined();
    expect(prefill + c.text).toBe('Echo: tell me a story');
    // Trailing whitespace is trimmed from the final assistant turn (Anthropic rejects it).
    const sent = fake.requests[fake.requests.length - 1].messages;
    expect(sent?.[sent.length - 1]).toEqual({ role: 'assistant', content: 'Echo: tell' });
  });

  it('continues a prefill that ends mid-word', async () => {
    const prefill = 'Echo: te';
    const c = await collect(provider, request('tell me a story', { prefill }));
    expect(prefill + c.text).toBe('Echo: tell me a story');
    expect(c.outputTokens).toBe(c.texts.length);
  });

  it.each([
    [500, true],
    [529, true],
    [429, true],
    [503, true],
    [400, false],
    [401, false],
    [404, false],
  ])('maps HTTP %i to a ProviderError with transient=%s', async (status, transient) => {
    const c = await collect(provider, request(`[fail:${status}] x`));
    expect(c.events).toEqual([]);
    expect(c.error).toBeInstanceOf(ProviderError);
    expect(c.error).toMatchObject({ transient, status });
  });

  it('fails only the first K requests with [fail-times:K]', async () => {
    const msg = '[fail:503][fail-times:1] retry me';
    const first = await collect(provider, request(msg));
    expect(first.error).toMatchObject({ transient: true, status: 503 });
    const second = await collect(provider, request(msg));
    expect(second.error).toBeUndefined();
    expect(second.text).toBe(`Echo: ${msg}`);
  });

  it('turns an error event inside the stream into a transient ProviderError after the deltas', async () => {
    const c = await collect(provider, request('[fail-after:2] some longer text here'));
    expect(c.texts).toEqual(['Echo', ': [f']);
    expect(c.error).toBeInstanceOf(ProviderError);
    expect((c.error as ProviderError).transient).toBe(true);
    expect((c.error as ProviderError).status).toBeUndefined();
    expect((c.error as ProviderError).message).toMatch(/overloaded_error/);
  });

  it('aborts promptly through the signal mid-stream, and the server sees the disconnect', async () => {
    const abortedBefore = fake.aborted;
    const ac = new AbortController();
    const started = Date.now();
    let abortedAt = 0;
    const c = await collect(
      provider,
      request('[slow:200] a fairly long message to stream', { signal: ac.signal }),
      (e) => {
        if (e.type === 'text' && abortedAt === 0) {
          abortedAt = Date.now();
          ac.abort();
        }
      }
    );
    expect(c.error).toBeInstanceOf(ProviderAbortedError);
    expect(c.texts).toHaveLength(1);
    expect(Date.now() - abortedAt).toBeLessThan(1000);
    expect(Date.now() - started).toBeLessThan(1000);
    await holds(() => fake.aborted === abortedBefore + 1);
    await holds(() => fake.activeConnections === 0);
  });

  it('aborts a hung stream (no event after message_start)', async () => {
    const abortedBefore = fake.aborted;
    const ac = new AbortController();
    const c = await collect(provider, request('[hang]', { signal: ac.signal }), (e) => {
      if (e.type === 'usage') setTimeout(() => ac.abort(), 50);
    });
    expect(c.error).toBeInstanceOf(ProviderAbortedError);
    expect(c.events).toHaveLength(1);
    await holds(() => fake.aborted === abortedBefore + 1);
  });

  it('rejects with ProviderAbortedError when the signal is already aborted, sending nothing', async () => {
    const before = fake.requests.length;
    const c = await collect(provider, request('never sent', { signal: AbortSignal.abort() }));
    expect(c.error).toBeInstanceOf(ProviderAbortedError);
    expect(fake.requests.length).toBe(before);
  });

  it('maps a refused connection to a transient ProviderError', async () => {
    const closed = await startFakeAnthropic();
    await closed.close();
    const c = await collect(createAnthropicProvider({ apiKey: 'k', baseURL: closed.url }), request('hi'));
    expect(c.error).toBeInstanceOf(ProviderError);
    expect(c.error).toMatchObject({ transient: true, status: undefined });
  });
});

describe('fake Anthropic server', () => {
  it('requires x-api-key and answers unknown paths with 404', async () => {
    const fake = await startFakeAnthropic();
    try {
      const noKey = await fetch(`${fake.url}/v1/messages`, { method: 'POST', body: '{}' });
      expect(noKey.status).toBe(401);
      expect(await noKey.json()).toMatchObject({ type: 'error', error: { type: 'authentication_error' } });
      const unknown = await fetch(`${fake.url}/v1/nope`, { headers: { 'x-api-key': 'k' } });
      expect(unknown.status).toBe(404);
      expect(await unknown.json()).toMatchObject({ type: 'error', error: { type: 'not_found_error' } });
      const withKey = await fetch(`${fake.url}/v1/messages`, {
        method: 'POST',
        headers: { 'x-api-key': 'k', 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'm', max_tokens: 5, messages: [{ role: 'user', content: 'yo' }] }),
      });
      expect(withKey.status).toBe(200);
      expect(await withKey.json()).toMatchObject({ content: [{ type: 'text', text: 'Echo: yo' }] });
    } finally {
      await fake.close();
    }
  });

  it('streams [chunks:N] as tokI words', async () => {
    const fake = await startFakeAnthropic();
    try {
      const provider = createAnthropicProvider({ apiKey: 'k', baseURL: fake.url });
      const c = await collect(provider, request('[chunks:3]'));
      expect(c.texts).toEqual(['tok1 ', 'tok2 ', 'tok3 ']);
      expect(c.outputTokens).toBe(3);
    } finally {
      await fake.close();
    }
  });
});

describe('built-in provider', () => {
  const expected = (said: string, why = 'this agent asks for it by name'): string =>
    `I am the built-in offline model (${why}). You said: "${said}".`;

  it('streams a deterministic reply word by word with usage', async () => {
    const provider = createBuiltinProvider({ delayMs: 0 });
    expect(provider.name).toBe('builtin');
    const req = request('hello there', { system: 'sys' });
    const c = await collect(provider, req);
    expect(c.error).toBeUndefined();
    expect(c.text).toBe(expected('hello there'));
    expect(c.texts[0]).toBe('I ');
    expect(c.texts.every((t) => /^\S+\s*$/.test(t))).toBe(true);
    expect(c.events[0]).toEqual({ type: 'usage', inputTokens: Math.ceil(('sys'.length + 'hello there'.length) / 4) });
    expect(c.events[c.events.length - 1]).toEqual({ type: 'usage', outputTokens: c.texts.length });
    // Deterministic: the same request gives the same chunks.
    expect((await collect(provider, req)).texts).toEqual(c.texts);
  });

  it('says why it answers when it is a fallback', async () => {
    const c = await collect(createBuiltinProvider({ delayMs: 0 }), request('hi', { note: NO_PROVIDER_NOTE }));
    expect(c.text).toBe(expected('hi', NO_PROVIDER_NOTE));
  });

  it('quotes at most 500 characters of the last user message', async () => {
    const long = 'x'.repeat(800);
    const c = await collect(createBuiltinProvider({ delayMs: 0 }), request(long));
    expect(c.text).toBe(expected('x'.repeat(500)));
  });

  it('yields only the remainder after a prefill', async () => {
    const full = expected('again');
    const prefill = full.slice(0, 30);
    const c = await collect(createBuiltinProvider({ delayMs: 0 }), request('again', { prefill }));
    expect(prefill + c.text).toBe(full);
    expect(c.outputTokens).toBe(full.match(/\S+\s*/g)?.length);
  });

  it('aborts promptly during a wait', async () => {
    const ac = new AbortController();
    const started = Date.now();
    const c = await collect(createBuiltinProvider({ delayMs: 5000 }), request('hi', { signal: ac.signal }), (e) => {
      if (e.type === 'text') setTimeout(() => ac.abort(), 20);
    });
    expect(c.error).toBeInstanceOf(ProviderAbortedError);
    expect(c.texts).toEqual(['I ']);
    expect(Date.now() - started).toBeLessThan(1000);
  });
});

describe('resolveModel', () => {
  const none = { defaultModel: 'builtin' };
  const anthropic = { ...none, anthropicApiKey: 'sk-ant' };
  const openaiKey = { ...none, openaiApiKey: 'sk' };
  const openaiUrl = { ...none, openaiBaseUrl: 'http://localhost:11434/v1' };
  // DEFAULT_MODEL unset: the configured provider answers with its default model.
  const unset = {};
  const both = { anthropicApiKey: 'sk-ant', openaiApiKey: 'sk' };
  const noAnthropic = 'ANTHROPIC_API_KEY is not set';
  const noOpenAI = 'OPENAI_API_KEY / OPENAI_BASE_URL are not set';
  const builtin = (note?: string): ResolvedModel => ({
    provider: 'builtin',
    model: 'builtin',
    ...(note ? { note } : {}),
  });

  it.each<[string | null | undefined, Parameters<typeof resolveModel>[1], ResolvedModel]>([
    ['builtin', anthropic, builtin()],
    ['builtin:fast', openaiKey, builtin()],
    [undefined, none, builtin()],
    [null, { ...anthropic, defaultModel: 'claude-sonnet-4-5' }, { provider: 'anthropic', model: 'claude-sonnet-4-5' }],
    ['', { ...openaiKey, defaultModel: 'gpt-4o' }, { provider: 'openai', model: 'gpt-4o' }],
    ['anthropic:claude-opus-4-1', anthropic, { provider: 'anthropic', model: 'claude-opus-4-1' }],
    ['claude-haiku-4-5', anthropic, { provider: 'anthropic', model: 'claude-haiku-4-5' }],
    ['anthropic:claude-opus-4-1', openaiKey, builtin(noAnthropic)],
    ['claude-haiku-4-5', none, builtin(noAnthropic)],
    ['openai:gpt-4o-mini', openaiKey, { provider: 'openai', model: 'gpt-4o-mini' }],
    ['llama3.2', openaiUrl, { provider: 'openai', model: 'llama3.2' }],
    ['gpt-4o', openaiKey, { provider: 'openai', model: 'gpt-4o' }],
    ['openai:gpt-4o', anthropic, builtin(noOpenAI)],
    ['llama3.2', none, builtin(noOpenAI)],
    [undefined, unset, builtin(NO_PROVIDER_NOTE)],
    [null, { anthropicApiKey: 'sk-ant' }, { provider: 'anthropic', model: DEFAULT_ANTHROPIC_MODEL }],
    ['', both, { provider: 'anthropic', model: DEFAULT_ANTHROPIC_MODEL }],
    [undefined, { openaiApiKey: 'sk' }, { provider: 'openai', model: DEFAULT_OPENAI_MODEL }],
    [undefined, { openaiBaseUrl: 'http://localhost:11434/v1' }, { provider: 'openai', model: DEFAULT_OPENAI_MODEL }],
    ['gpt-4o', { ...both, defaultModel: 'claude-haiku-4-5' }, { provider: 'openai', model: 'gpt-4o' }],
    [undefined, { ...both, defaultModel: 'openai:gpt-4o' }, { provider: 'openai', model: 'gpt-4o' }],
    [undefined, { ...both, defaultModel: 'builtin' }, builtin()],
  ])('resolves %p', (requested, config, expected) => {
    expect(resolveModel(requested, config)).toEqual(expected);
  });
});

describe('createProvider', () => {
  it('returns the matching implementation, one per provider per config object', () => {
    const config = { anthropicApiKey: 'k', openaiBaseUrl: 'http://127.0.0.1:1/v1' };
    const a = createProvider({ provider: 'anthropic', model: 'claude-x' }, config);
    expect(a.name).toBe('anthropic');
    expect(createProvider({ provider: 'anthropic', model: 'claude-y' }, config)).toBe(a);
    expect(createProvider({ provider: 'openai', model: 'm' }, config).name).toBe('openai');
    expect(createProvider({ provider: 'builtin', model: 'builtin' }, config).name).toBe('builtin');
    expect(createProvider({ provider: 'anthropic', model: 'claude-x' }, { ...config })).not.toBe(a);
  });

  it('refuses a provider whose key is gone, as a permanent error', () => {
    expect(() => createProvider({ provider: 'anthropic', model: 'claude-x' }, {})).toThrow(ProviderError);
    expect(() => createProvider({ provider: 'openai', model: 'gpt-4o' }, {})).toThrow(/OPENAI_API_KEY/);
  });
});

/** A tiny OpenAI chat-completions SSE endpoint: `Hi` + `, <last user message>` and usage; `[fail:N]` answers N. */
interface FakeOpenAI {
  url: string;
  requests: { headers: http.IncomingHttpHeaders; body: Record<string, unknown> }[];
  close(): Promise<void>;
}

/**
 * Starts the fake OpenAI endpoint on 127.0.0.1 with a random port.
 * @returns the running fake; `url` is the base address including `/v1`.
 */
async function startFakeOpenAI(): Promise<FakeOpenAI> {
  const requests: FakeOpenAI['requests'] = [];
  const server = http.createServer((req, res) => {
    let raw = '';
    req.on('data', (d: Buffer) => (raw += d.toString()));
    req.on('end', () => {
      if (req.url !== '/v1/chat/completions') {
        res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":{"message":"not found"}}');
        return;
      }
      const body = JSON.parse(raw) as { messages: { role: string; content: string }[] };
      requests.push({ headers: req.headers, body });
      const lastUser = [...body.messages].reverse().find((m) => m.role === 'user')?.content ?? '';
      const fail = /\[fail:(\d+)\]/.exec(lastUser);
      if (fail) {
        const error = { message: 'injected', type: 'server_error', param: null, code: null };
        res.writeHead(Number(fail[1]), { 'content-type': 'application/json' }).end(JSON.stringify({ error }));
        return;
      }
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      const base = { id: 'chatcmpl-1', object: 'chat.completion.chunk', created: 0, model: 'fake' };
      const chunk = (choices: unknown[], extra: object = {}): void => {
        res.write(`data: ${JSON.stringify({ ...base, choices, ...extra })}\n\n`);
      };
      const delta = (d: object, finish: string | null = null): void =>
        chunk([{ index: 0, delta: d, finish_reason: finish }]);
      delta({ role: 'assistant', content: '' });
      delta({ content: 'Hi' });
      delta({ content: `, ${lastUser}` });
      delta({}, 'stop');
      chunk([], { usage: { prompt_tokens: 11, completion_tokens: 2, total_tokens: 13 } });
      res.end('data: [DONE]\n\n');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/v1`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

describe('OpenAI provider (real SDK against a fake chat-completions endpoint)', () => {
  let fake: FakeOpenAI;
  let provider: ModelProvider;

  beforeAll(async () => {
    fake = await startFakeOpenAI();
    // Only a base address, as for Ollama / vLLM / llama.cpp: the key defaults to a placeholder.
    provider = createOpenAIProvider({ baseURL: fake.url });
  });
  afterAll(async () => {
    await fake.close();
  });

  it('streams text and usage, sending the system prompt first and asking for usage', async () => {
    const c = await collect(provider, request('there', { model: 'llama3.2', maxTokens: 77 }));
    expect(c.error).toBeUndefined();
    expect(provider.name).toBe('openai');
    expect(c.text).toBe('Hi, there');
    expect(c.events.filter((e) => e.type === 'usage')).toEqual([{ type: 'usage', inputTokens: 11, outputTokens: 2 }]);
    const sent = fake.requests[fake.requests.length - 1];
    expect(sent.headers.authorization).toBe('Bearer not-needed');
    expect(sent.body).toMatchObject({
      model: 'llama3.2',
      stream: true,
      stream_options: { include_usage: true },
      max_tokens: 77,
      messages: [
        { role: 'system', content: 'You are terse.' },
        { role: 'user', content: 'there' },
      ],
    });
  });

  it('appends the prefill as a final assistant message', async () => {
    await collect(provider, request('there', { prefill: 'Hi, ' }));
    const messages = fake.requests[fake.requests.length - 1].body.messages as unknown[];
    expect(messages[messages.length - 1]).toEqual({ role: 'assistant', content: 'Hi, ' });
  });

  it('maps 503 to a transient ProviderError and 400 to a permanent one', async () => {
    const unavailable = await collect(provider, request('[fail:503]'));
    expect(unavailable.error).toBeInstanceOf(ProviderError);
    expect(unavailable.error).toMatchObject({ transient: true, status: 503 });
    const bad = await collect(provider, request('[fail:400]'));
    expect(bad.error).toMatchObject({ transient: false, status: 400 });
  });
});
