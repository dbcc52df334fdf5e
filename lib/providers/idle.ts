/**
 * The idle timeout of every model call (docs/architecture.md §7): a provider stream that yields no event for `idleMs`
 * fails with ProviderIdleError, and its request is aborted. Measured between events, the wait for the response
 * headers included, so a model that goes silent at any point (after `message_start`, mid-reply) frees its
 * attempt. Provider-independent: it wraps whatever a ModelProvider's stream yields.
 *
 * One timer for the whole stream, re-armed with `refresh()` before each read, and no race of promises: a reply
 * of a few hundred deltas otherwise created a timer, a promise and a race per delta (6.4 µs per event against
 * 2.8, docs/benchmarks.md "The idle timer").
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
  // Settles the read in progress as idle; unset while the consumer holds an event (its time is not silence).
  let onIdle: (() => void) | undefined;
  const timer = setTimeout(() => onIdle?.(), idleMs);
  try {
    for (;;) {
      timer.refresh();
      const next = iterator.next();
      const result = await new Promise<IteratorResult<T> | 'idle'>((resolve, reject) => {
        onIdle = () => resolve('idle');
        next.then(resolve, reject);
      }).finally(() => {
        onIdle = undefined;
      });
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
  } finally {
    clearTimeout(timer);
  }
}
