/**
 * A request's child logger (`ctx.state.log`), made when something first logs through it, with every binding added
 * until then ({@link bindRequestLog}: the caller, once authenticated): a pino child serializes its bindings when it
 * is made, and most requests log nothing below the configured level (docs/benchmarks.md "Creating an agent: one
 * read per expired cache entry, validation once, loggers on demand"). Its own module: the auth middlewares and the
 * request-id middleware both use it.
 */
import type { AppContext } from './context';
import type { Logger } from '../lib/logger';

/** A request's logger, made on first use. */
interface LazyLog {
  bindings: Record<string, unknown>;
  made?: Logger;
}
const lazyLogs = new WeakMap<object, LazyLog>();

/**
 * Adds bindings to every line the request logs from now on (`ctx.state.log`).
 * @param ctx the request.
 * @param bindings e.g. the caller's organization and user.
 */
export function bindRequestLog(ctx: AppContext, bindings: Record<string, unknown>): void {
  const lazy = lazyLogs.get(ctx.state);
  if (lazy && !lazy.made) Object.assign(lazy.bindings, bindings);
  else ctx.state.log = ctx.state.log.child(bindings);
}

/**
 * Makes `ctx.state.log` a logger made on first use.
 * @param ctx the request.
 * @param logger the root logger.
 * @param bindings the request's first bindings (its id).
 */
export function installRequestLog(ctx: AppContext, logger: Logger, bindings: Record<string, unknown>): void {
  const lazy: LazyLog = { bindings };
  lazyLogs.set(ctx.state, lazy);
  Object.defineProperty(ctx.state, 'log', {
    configurable: true,
    enumerable: true,
    get: () => (lazy.made ??= logger.child(lazy.bindings)),
    set: (value: Logger) => void (lazy.made = value),
  });
}
