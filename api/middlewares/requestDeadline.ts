/**
 * Bounds every request with one deadline (lib/requestDeadline.ts; docs/decisions.md "One deadline per request"):
 * when REQUEST_DEADLINE_MS runs out before the answer, the error middleware answers 503 `service_unavailable` with
 * `Retry-After`. A response that has started (an event stream, the MCP transport writing its own) is no longer
 * bounded: it can no longer be turned into an error.
 */
import type { Next } from 'koa';
import { withRequestDeadline } from '../../lib/requestDeadline';
import type { AppContext } from '../context';

/**
 * @param ms the deadline of a request (REQUEST_DEADLINE_MS).
 * @returns the middleware; mount it after the error handler and the body parser (reading a body is the client's
 *   time, not ours).
 */
export function requestDeadline(ms: number) {
  return async function requestDeadlineMiddleware(ctx: AppContext, next: Next): Promise<void> {
    await withRequestDeadline(ms, next, () => !ctx.headerSent && ctx.respond !== false);
  };
}
