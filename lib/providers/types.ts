/**
 * The model provider interface (docs/architecture.md §7): one streaming call that yields text deltas and usage, and
 * honours an AbortSignal. Implementations: Anthropic Messages API, OpenAI-compatible chat completions, and the
 * offline built-in provider.
 */

/**
 * A block of a structured message: text, a tool call the model made, the result of one, or a medium of the user's
 * turn (an image, a PDF document: base64 content; commands/mediaTurn.ts).
 */
export type ModelContentBlock =
  | { type: 'text'; text: string }
  | { type: 'tool_use'; id: string; name: string; input: Record<string, unknown> }
  | { type: 'tool_result'; toolUseId: string; content: string; isError?: boolean }
  | { type: 'image'; mediaType: 'image/png' | 'image/jpeg' | 'image/gif' | 'image/webp'; data: string }
  | { type: 'document'; mediaType: 'application/pdf'; data: string; title: string };

/**
 * One turn of conversation history sent to the model: plain text, or blocks (an assistant turn that called tools,
 * then a user turn carrying their results).
 */
export interface ModelMessage {
  role: 'user' | 'assistant';
  content: string | ModelContentBlock[];
}

/** A tool the model may call (its input described by a JSON Schema). */
export interface ModelTool {
  name: string;
  description: string;
  inputSchema: Record<string, unknown>;
}

/** @returns the text of a message's content (text blocks joined; tool blocks left out). */
export function textOfContent(content: ModelMessage['content']): string {
  if (typeof content === 'string') return content;
  return content.map((b) => (b.type === 'text' ? b.text : '')).join('');
}

export interface ModelRequest {
  /** Provider-specific model name (without the `anthropic:` / `openai:` prefix). */
  model: string;
  system: string;
  /** Earlier turns in order, ending with the new user message. */
  messages: ModelMessage[];
  /**
   * Text of the reply that was already delivered by an earlier attempt (a worker died mid-stream). The provider
   * continues the reply after it (assistant prefill) and yields only the new text.
   */
  prefill?: string;
  maxTokens: number;
  /** Tools the model may call; a call ends the reply with `tool_use` events (the caller runs them and asks again). */
  tools?: ModelTool[];
  signal: AbortSignal;
  /** Why the built-in model answers when it is a fallback (ResolvedModel.note); the built-in model says it. */
  note?: string;
}

/** What a streaming call yields. */
export type ModelEvent =
  | { type: 'text'; text: string }
  | { type: 'usage'; inputTokens?: number; outputTokens?: number }
  | { type: 'tool_use'; id: string; name: string; input: Record<string, unknown> };

export interface ModelProvider {
  /** `anthropic`, `openai` or `builtin`. */
  readonly name: 'anthropic' | 'openai' | 'builtin';
  stream(request: ModelRequest): AsyncIterable<ModelEvent>;
}

/**
 * A provider failure. `transient` failures (HTTP 429, 5xx, 529, network errors, timeouts) may be retried while no
 * output has been delivered; others (4xx: bad key, bad model, bad request) may not.
 */
export class ProviderError extends Error {
  /**
   * @param message what happened, with the provider's details (logs only: it may hold a raw error body).
   * @param transient whether the call may be retried.
   * @param status the provider's HTTP status, if it answered with one.
   * @param providerMessage the provider's own one-line explanation (its error body's `message`), which a client
   *   may read after "The model provider rejected the request: ".
   */
  constructor(
    message: string,
    readonly transient: boolean,
    readonly status?: number,
    readonly providerMessage?: string
  ) {
    super(message);
    this.name = 'ProviderError';
  }
}

/** The resolved provider has no key or address configured any more (not retried). */
export class ProviderNotConfiguredError extends ProviderError {
  constructor(message: string) {
    super(message, false);
    this.name = 'ProviderNotConfiguredError';
  }
}

/** The provider sent no event for the idle timeout: the attempt fails (transient: it may be retried). */
export class ProviderIdleError extends ProviderError {
  constructor(readonly idleMs: number) {
    super(`No event from the model provider for ${idleMs} ms`, true);
    this.name = 'ProviderIdleError';
  }
}

/** Thrown when the request was aborted through its signal (cancellation). */
export class ProviderAbortedError extends Error {
  constructor() {
    super('Model request aborted');
    this.name = 'ProviderAbortedError';
  }
}

/** Which provider and model an execution uses, as recorded on the execution. */
export interface ResolvedModel {
  provider: ModelProvider['name'];
  /** Model name sent to the provider. */
  model: string;
  /** Why the built-in provider was chosen, when it was a fallback. */
  note?: string;
}
