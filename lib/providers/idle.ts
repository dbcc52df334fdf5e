/**
 * The idle timeout of every model call (docs/architecture.md §7): a provider stream that yields no event for `idleMs`
 * fails with ProviderIdleError, and its request is aborted. Measured between events, the wait for the response
 * headers included, so a model that goes silent at any point (after `message_start`, mid-reply) frees its
 * attempt. Provider-independent: it wraps whatever a ModelProvider's stream yields.
 */
import { ProviderIdleError } from './types';

/**
 * @param source the provider's stream.
 * @param idleMs longest silence allowed between two events.
 * @param abort called once when the silence is too long (abort the provider request with it).
 * @yields the source's events, unchanged.
 * @throws ProviderIdleError after `idleMs` without an event.
 */
export async function* withIdleTimeout<T>(
  source: AsyncIterable<T>,
  idleMs: number,
  abort: () => void
): AsyncGenerator<T> {
  const iterator = source[Symbol.asyncIterator]();
  for (;;) {
    let timer: NodeJS.Timeout | undefined;
    const silence = new Promise<'idle'>((resolve) => {
      timer = setTimeout(() => resolve('idle'), idleMs);
    });
    const next = iterator.next();
    let result: IteratorResult<T> | 'idle';
    try {
      result = await Promise.race([next, silence]);
    } finally {
      clearTimeout(timer);
    }
    if (result === 'idle') {
      abort();
      // The pending read settles (usually rejects) once the abort reaches it; nobody waits for it any more.
      next.catch(() => undefined);
      void iterator.return?.()?.catch(() => undefined);
      throw new ProviderIdleError(idleMs);
    }
    if (result.done) return;
    yield result.value;
  }
}
