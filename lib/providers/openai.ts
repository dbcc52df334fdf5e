/**
 * OpenAI-compatible chat completions provider (docs/architecture.md §7): OpenAI itself, and local servers with the same
 * API (Ollama, vLLM, llama.cpp) through a base address.
 *
 * The SDK never retries (`maxRetries: 0`): the Temporal activity owns retrying, and it may only retry while no
 * output has been delivered, which the SDK cannot know.
 */
import OpenAI, { APIConnectionError, APIError, APIUserAbortError } from 'openai';
import type { ChatCompletionContentPart, ChatCompletionMessageParam } from 'openai/resources/chat/completions';
import { ProviderAbortedError, ProviderError, textOfContent } from './types';
import type { ModelEvent, ModelMessage, ModelProvider, ModelRequest } from './types';
import { requestIdHeaders } from '../requestContext';

/**
 * @returns the chat-completions form of one message: an assistant turn's tool calls become `tool_calls`, a user
 * turn's tool results one `tool` message each (their text, if any, a user message after them); a user turn with
 * images, a user message of content parts (text, `image_url` data URLs).
 */
function messageParams(m: ModelMessage): ChatCompletionMessageParam[] {
  if (typeof m.content === 'string') return [{ role: m.role, content: m.content }];
  const text = textOfContent(m.content);
  if (m.role === 'assistant') {
    const calls = m.content.flatMap((b) =>
      b.type === 'tool_use'
        ? [{ id: b.id, type: 'function' as const, function: { name: b.name, arguments: JSON.stringify(b.input) } }]
        : []
    );
    return [{ role: 'assistant', content: text || null, ...(calls.length ? { tool_calls: calls } : {}) }];
  }
  const results = m.content.flatMap((b): ChatCompletionMessageParam[] =>
    b.type === 'tool_result' ? [{ role: 'tool', tool_call_id: b.toolUseId, content: b.content }] : []
  );
  if (!m.content.some((b) => b.type === 'image' || b.type === 'document'))
    return [...results, ...(text ? [{ role: 'user' as const, content: text }] : [])];
  // A turn with media: its text and images as content parts, images as data URLs.
  const parts = m.content.flatMap((b): ChatCompletionContentPart[] => {
    if (b.type === 'text') return b.text === '' ? [] : [{ type: 'text', text: b.text }];
    if (b.type === 'image') return [{ type: 'image_url', image_url: { url: `data:${b.mediaType};base64,${b.data}` } }];
    // Refused before the execution starts (commands/media.ts `checkMediaForModel`); said, never sent, if one came.
    if (b.type === 'document') return [{ type: 'text', text: `[${b.title}: a PDF this model cannot read]` }];
    return [];
  });
  return [...results, { role: 'user', content: parts }];
}

/** Options of {@link createOpenAIProvider}. */
export interface OpenAIProviderOptions {
  /** API key; local servers need none. @default 'not-needed' */
  apiKey?: string;
  /** API base address including `/v1` (e.g. `http://localhost:11434/v1`). @default https://api.openai.com/v1 */
  baseURL?: string;
  /** Time allowed until the response headers arrive, in milliseconds. @default the SDK's (10 minutes) */
  timeoutMs?: number;
}

const DEFAULT_BASE_URL = 'https://api.openai.com/v1';

/**
 * @param status an HTTP status.
 * @returns whether a request that failed with it may be retried (408, 429, 5xx, 529).
 */
function isTransientStatus(status: number): boolean {
  return status === 408 || status === 429 || status >= 500;
}

/**
 * Turns whatever the SDK (or fetch underneath it) threw into the provider error vocabulary.
 * @param err the thrown value.
 * @param signal the request's signal: an abort can surface as a connection error, so it is checked first.
 * @returns a ProviderAbortedError or a ProviderError.
 */
function toProviderError(err: unknown, signal: AbortSignal): Error {
  if (err instanceof ProviderError || err instanceof ProviderAbortedError) return err;
  if (signal.aborted || err instanceof APIUserAbortError) return new ProviderAbortedError();
  // APIConnectionTimeoutError is a subclass: timeouts are network trouble too.
  if (err instanceof APIConnectionError) return new ProviderError(`OpenAI connection failed: ${err.message}`, true);
  if (err instanceof APIError) {
    // No status: an `error` object inside an accepted stream, which servers send when generation fails midway
    // (overload, internal failure); request problems are rejected with a status before the stream starts.
    const own = (err.error as { message?: unknown } | undefined)?.message;
    const providerMessage = typeof own === 'string' ? own : undefined;
    if (err.status === undefined)
      return new ProviderError(`OpenAI stream error: ${err.message}`, true, undefined, providerMessage);
    return new ProviderError(
      `OpenAI API error: ${err.message}`,
      isTransientStatus(err.status),
      err.status,
      providerMessage
    );
  }
  // Anything else comes from reading the body (socket reset mid-stream, garbled SSE): retryable network trouble.
  const message = err instanceof Error ? err.message : String(err);
  return new ProviderError(`OpenAI request failed: ${message}`, true);
}

/**
 * Creates the OpenAI-compatible provider.
 * @param opts optional API key, base address and header timeout.
 * @returns a ModelProvider named `openai`.
 */
export function createOpenAIProvider(opts: OpenAIProviderOptions): ModelProvider {
  const client = new OpenAI({
    // The SDK refuses to start without a key; local servers (Ollama, vLLM, llama.cpp) ignore it.
    apiKey: opts.apiKey ?? 'not-needed',
    // Explicit values so OPENAI_BASE_URL / OPENAI_ORG_ID / OPENAI_PROJECT_ID in the environment never leak in:
    // config.ts is the only module that reads the environment.
    baseURL: opts.baseURL ?? DEFAULT_BASE_URL,
    organization: null,
    project: null,
    webhookSecret: null,
    maxRetries: 0,
    ...(opts.timeoutMs !== undefined ? { timeout: opts.timeoutMs } : {}),
  });

  return {
    name: 'openai',
    async *stream(req: ModelRequest): AsyncGenerator<ModelEvent> {
      if (req.signal.aborted) throw new ProviderAbortedError();
      const messages: ChatCompletionMessageParam[] = [
        { role: 'system', content: req.system },
        ...req.messages.flatMap(messageParams),
      ];
      // Prefill as a final assistant message: vLLM, llama.cpp and Ollama continue it. OpenAI proper may instead
      // start a new reply (and repeat text already delivered); it offers no way to continue a partial answer.
      if (req.prefill) messages.push({ role: 'assistant', content: req.prefill });
      let finished = false;

      try {
        const chunks = await client.chat.completions.create(
          {
            model: req.model,
            messages,
            stream: true,
            stream_options: { include_usage: true },
            // max_tokens rather than max_completion_tokens: it is the one the compatible servers understand.
            max_tokens: req.maxTokens,
            ...(req.tools?.length
              ? {
                  tools: req.tools.map((t) => ({
                    type: 'function' as const,
                    function: { name: t.name, description: t.description, parameters: t.inputSchema },
                  })),
                }
              : {}),
          },
          { signal: req.signal, headers: requestIdHeaders() }
        );
        // Tool calls stream as fragments per index (id and name first, then pieces of the arguments' JSON).
        const calls = new Map<number, { id: string; name: string; args: string }>();
        for await (const chunk of chunks) {
          const choice = chunk.choices[0];
          const text = choice?.delta?.content;
          if (text) yield { type: 'text', text };
          for (const call of choice?.delta?.tool_calls ?? []) {
            const seen = calls.get(call.index) ?? { id: '', name: '', args: '' };
            if (call.id) seen.id = call.id;
            if (call.function?.name) seen.name += call.function.name;
            if (call.function?.arguments) seen.args += call.function.arguments;
            calls.set(call.index, seen);
          }
          if (choice?.finish_reason) finished = true;
          // With include_usage the usage arrives on a last chunk without choices (some servers attach it earlier).
          if (chunk.usage) {
            yield {
              type: 'usage',
              inputTokens: chunk.usage.prompt_tokens,
              outputTokens: chunk.usage.completion_tokens,
            };
          }
        }
        for (const [, call] of [...calls].sort(([a], [b]) => a - b)) {
          let input: Record<string, unknown>;
          try {
            input = (call.args.trim() === '' ? {} : JSON.parse(call.args)) as Record<string, unknown>;
          } catch {
            throw new ProviderError(`OpenAI sent tool arguments that are not JSON: ${call.args.slice(0, 200)}`, true);
          }
          yield { type: 'tool_use', id: call.id, name: call.name, input };
        }
      } catch (err) {
        throw toProviderError(err, req.signal);
      }
      // The SDK ends iteration silently when its signal aborts mid-stream, so the abort is detected here.
      if (req.signal.aborted) throw new ProviderAbortedError();
      // A body that ends before any finish_reason was cut off (proxy, network): the reply is incomplete.
      if (!finished) throw new ProviderError('OpenAI stream ended before a finish_reason', true);
    },
  };
}
