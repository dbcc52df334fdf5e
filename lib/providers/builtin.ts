/**
 * The built-in offline provider (docs/architecture.md §7): a deterministic echo so the service runs end to end with no
 * model key, and so tests and demos have a reply that depends only on the request.
 */
import { ProviderAbortedError, textOfContent } from './types';
import type { ModelEvent, ModelProvider, ModelRequest } from './types';

/** Options of {@link createBuiltinProvider}. */
export interface BuiltinProviderOptions {
  /** Pause before each chunk after the first, in milliseconds, so the reply streams visibly. @default 15 */
  delayMs?: number;
}

/** How much of the user's message the reply quotes. */
const MAX_QUOTE_CHARS = 500;

/**
 * @param req the model request.
 * @returns the complete reply the built-in model gives to it.
 */
function replyFor(req: ModelRequest): string {
  const content = [...req.messages].reverse().find((m) => m.role === 'user')?.content ?? '';
  // A turn with media ends with the message itself, after the media's blocks (commands/mediaTurn.ts).
  const blocks = typeof content === 'string' ? [] : content;
  const media = blocks.filter((b) => b.type !== 'tool_result').length - 1;
  const lastUser = media > 0 ? textOfContent(blocks.slice(-1)) : textOfContent(content);
  const why = req.note ?? 'this agent asks for it by name';
  const quote = `You said: "${lastUser.slice(0, MAX_QUOTE_CHARS)}"`;
  return `I am the built-in offline model (${why}). ${quote}${media > 0 ? `, with ${media} attached file(s) I do not read` : ''}.`;
}

/**
 * Waits, or rejects with ProviderAbortedError as soon as the signal aborts.
 * @param ms how long to wait.
 * @param signal the request's signal.
 * @returns a promise that resolves after `ms`.
 */
function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) {
      reject(new ProviderAbortedError());
      return;
    }
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(new ProviderAbortedError());
    };
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

/**
 * Creates the built-in provider.
 * @param opts optional delay between chunks.
 * @returns a ModelProvider named `builtin`.
 */
export function createBuiltinProvider(opts: BuiltinProviderOptions = {}): ModelProvider {
  const delayMs = opts.delayMs ?? 15;
  return {
    name: 'builtin',
    async *stream(req: ModelRequest): AsyncGenerator<ModelEvent> {
      if (req.signal.aborted) throw new ProviderAbortedError();
      const reply = replyFor(req);
      // Each chunk is a word with the whitespace after it, so the chunks concatenate to the exact reply.
      const chunks = reply.match(/\S+\s*/g) ?? [];
      const inputChars = req.system.length + req.messages.reduce((n, m) => n + textOfContent(m.content).length, 0);
      yield { type: 'usage', inputTokens: Math.ceil(inputChars / 4) };

      // A prefill is text an earlier attempt delivered: skip that many characters (it is the reply's beginning,
      // since the reply is deterministic). A prefill that does not match is ignored, like a model would do.
      let skip = req.prefill && reply.startsWith(req.prefill) ? req.prefill.length : 0;
      let first = true;
      for (const chunk of chunks) {
        if (skip >= chunk.length) {
          skip -= chunk.length;
          continue;
        }
        const text = chunk.slice(skip);
        skip = 0;
        if (!first) await sleep(delayMs, req.signal);
        first = false;
        if (req.signal.aborted) throw new ProviderAbortedError();
        yield { type: 'text', text };
      }
      if (req.signal.aborted) throw new ProviderAbortedError();
      yield { type: 'usage', outputTokens: chunks.length };
    },
  };
}
