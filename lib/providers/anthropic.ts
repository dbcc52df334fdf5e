/**
 * Anthropic Messages API provider (docs/architecture.md §7), through the official SDK with streaming.
 *
 * The SDK never retries (`maxRetries: 0`): the Temporal activity owns retrying, and it may only retry while no
 * output has been delivered, which the SDK cannot know.
 */
import Anthropic, { APIConnectionError, APIError, APIUserAbortError } from '@anthropic-ai/sdk';
import type { ContentBlockParam, MessageParam } from '@anthropic-ai/sdk/resources/messages';
import { ProviderAbortedError, ProviderError } from './types';
import type { ModelContentBlock, ModelEvent, ModelProvider, ModelRequest } from './types';
import { requestIdHeaders } from '../requestContext';

/**
 * @returns the Messages API form of a structured message's blocks (empty text blocks left out: refused there); media
 * as base64 image and document blocks.
 */
function blocksParam(blocks: ModelContentBlock[]): ContentBlockParam[] {
  return blocks.flatMap((b): ContentBlockParam[] => {
    if (b.type === 'text') return b.text === '' ? [] : [{ type: 'text', text: b.text }];
    if (b.type === 'tool_use') return [{ type: 'tool_use', id: b.id, name: b.name, input: b.input }];
    if (b.type === 'image')
      return [{ type: 'image', source: { type: 'base64', media_type: b.mediaType, data: b.data } }];
    if (b.type === 'document')
      return [{ type: 'document', title: b.title, source: { type: 'base64', media_type: b.mediaType, data: b.data } }];
    return [{ type: 'tool_result', tool_use_id: b.toolUseId, content: b.content, is_error: b.isError ?? false }];
  });
}

/** Options of {@link createAnthropicProvider}. */
export interface AnthropicProviderOptions {
  apiKey: string;
  /** API base address (e.g. a proxy or a test server). @default https://api.anthropic.com */
  baseURL?: string;
  /** Time allowed until the response headers arrive, in milliseconds. @default the SDK's (10 minutes) */
  timeoutMs?: number;
}

const DEFAULT_BASE_URL = 'https://api.anthropic.com';

/** Error types of an `error` SSE event that are worth retrying (the HTTP equivalents are 5xx / 429 / 529). */
const TRANSIENT_STREAM_ERROR_TYPES = new Set(['overloaded_error', 'api_error', 'rate_limit_error', 'timeout_error']);

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
  if (err instanceof APIConnectionError) return new ProviderError(`Anthropic connection failed: ${err.message}`, true);
  if (err instanceof APIError) {
    if (err.status === undefined) {
      // The SDK throws an APIError without a status for an `error` event inside an accepted stream.
      const type = err.type ?? 'unknown_error';
      const message = err.apiMessage ?? err.message;
      return new ProviderError(
        `Anthropic stream error (${type}): ${message}`,
        TRANSIENT_STREAM_ERROR_TYPES.has(type),
        undefined,
        err.apiMessage ?? undefined
      );
    }
    return new ProviderError(
      `Anthropic API error: ${err.message}`,
      isTransientStatus(err.status),
      err.status,
      err.apiMessage ?? undefined
    );
  }
  // Anything else comes from reading the body (socket reset mid-stream, garbled SSE): retryable network trouble.
  const message = err instanceof Error ? err.message : String(err);
  return new ProviderError(`Anthropic request failed: ${message}`, true);
}

/**
 * Creates the Anthropic provider.
 * @param opts API key, optional base address and header timeout.
 * @returns a ModelProvider named `anthropic`.
 */
export function createAnthropicProvider(opts: AnthropicProviderOptions): ModelProvider {
  const client = new Anthropic({
    apiKey: opts.apiKey,
    // Explicit values so ANTHROPIC_BASE_URL / ANTHROPIC_AUTH_TOKEN in the environment never leak in: config.ts is
    // the only module that reads the environment.
    baseURL: opts.baseURL ?? DEFAULT_BASE_URL,
    authToken: null,
    webhookKey: null,
    maxRetries: 0,
    ...(opts.timeoutMs !== undefined ? { timeout: opts.timeoutMs } : {}),
  });

  return {
    name: 'anthropic',
    async *stream(req: ModelRequest): AsyncGenerator<ModelEvent> {
      if (req.signal.aborted) throw new ProviderAbortedError();
      const messages: MessageParam[] = req.messages.map((m) => ({
        role: m.role,
        content: typeof m.content === 'string' ? m.content : blocksParam(m.content),
      }));
      const prefill = req.prefill ?? '';
      const trimmedPrefill = prefill.trimEnd();
      // Anthropic rejects a final assistant turn ending in whitespace, and an empty one.
      if (trimmedPrefill !== '') messages.push({ role: 'assistant', content: trimmedPrefill });
      // The model re-generates the whitespace we trimmed; it was delivered already, so drop it once.
      let stripLeading = trimmedPrefill.length < prefill.length;
      let completed = false;

      try {
        const events = await client.messages.create(
          {
            model: req.model,
            max_tokens: req.maxTokens,
            ...(req.system !== '' ? { system: req.system } : {}),
            messages,
            ...(req.tools?.length
              ? {
                  tools: req.tools.map((t) => ({
                    name: t.name,
                    description: t.description,
                    input_schema: t.inputSchema as { type: 'object' },
                  })),
                }
              : {}),
            stream: true,
          },
          { signal: req.signal, headers: requestIdHeaders() }
        );
        // Tool calls arrive as a content block whose input streams as JSON fragments; yielded once it is complete.
        const toolBlocks = new Map<number, { id: string; name: string; json: string }>();
        for await (const event of events) {
          switch (event.type) {
            case 'content_block_start':
              if (event.content_block.type === 'tool_use')
                toolBlocks.set(event.index, { id: event.content_block.id, name: event.content_block.name, json: '' });
              break;
            case 'content_block_stop': {
              const tool = toolBlocks.get(event.index);
              if (tool) {
                toolBlocks.delete(event.index);
                let input: Record<string, unknown>;
                try {
                  input = (tool.json.trim() === '' ? {} : JSON.parse(tool.json)) as Record<string, unknown>;
                } catch {
                  throw new ProviderError(
                    `Anthropic sent tool input that is not JSON: ${tool.json.slice(0, 200)}`,
                    true
                  );
                }
                yield { type: 'tool_use', id: tool.id, name: tool.name, input };
              }
              break;
            }
            case 'message_start':
              yield { type: 'usage', inputTokens: event.message.usage.input_tokens };
              break;
            case 'content_block_delta':
              if (event.delta.type === 'input_json_delta') {
                const tool = toolBlocks.get(event.index);
                if (tool) tool.json += event.delta.partial_json;
              } else if (event.delta.type === 'text_delta') {
                let text = event.delta.text;
                if (stripLeading) {
                  text = text.trimStart();
                  if (text === '') break;
                  stripLeading = false;
                }
                if (text !== '') yield { type: 'text', text };
              }
              break;
            case 'message_delta':
              yield { type: 'usage', outputTokens: event.usage.output_tokens };
              break;
            case 'message_stop':
              completed = true;
              break;
            default:
              break;
          }
        }
      } catch (err) {
        throw toProviderError(err, req.signal);
      }
      // The SDK ends iteration silently when its signal aborts mid-stream, so the abort is detected here.
      if (req.signal.aborted) throw new ProviderAbortedError();
      // A body that ends before message_stop was cut off (proxy, network): the reply is incomplete.
      if (!completed) throw new ProviderError('Anthropic stream ended before message_stop', true);
    },
  };
}
