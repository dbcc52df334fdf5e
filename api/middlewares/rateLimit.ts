/**
 * The current surface's rate limit (SPEC "Limits"; docs/decisions.md "Rate limit"): after authentication, counts
 * the request in the identity's window and sets the X-RateLimit-* / RateLimit-* headers (they stay on error
 * responses too); over the budget → 429 `rate_limited` with `Retry-After`. An identity's own limit (admin CLI)
 * replaces the configured one under the same header names.
 */
import type { Next } from 'koa';
import { countRequest } from '../../commands/rateLimits';
import { RateLimitedError } from '../../lib/errors';
import { rateLimitRefusals } from '../../lib/metrics';
import type { AppContext } from '../context';

/**
 * @param ctx the request.
 * @returns how many requests it counts for: one, or one per JSON-RPC message of a batch sent to the MCP endpoint
 *   (a batch of 100 `tools/call` is 100 requests, executions started by `execute_agent` included).
 */
function weightOf(ctx: AppContext): number {
  const body = (ctx.request as { body?: unknown }).body;
  return ctx.method === 'POST' && Array.isArray(body) ? Math.max(1, body.length) : 1;
}

/**
 * @param options.limit default requests per window.
 * @param options.windowSeconds window length.
 * @returns the middleware (mount it after authentication).
 */
export function rateLimit(options: { limit: number; windowSeconds: number }) {
  return async function rateLimitMiddleware(ctx: AppContext, next: Next): Promise<void> {
    const { organizationId, userId, rateLimit: own } = ctx.state.auth;
    const limit = own ?? options.limit;
    const now = Date.now();
    const weight = weightOf(ctx);
    const { count, resetAt } = await countRequest(`${organizationId}:${userId}`, options.windowSeconds, now, weight);
    const remaining = Math.max(0, limit - count);
    const resetIn = Math.max(1, Math.ceil((resetAt - now) / 1000));
    ctx.set({
      'X-RateLimit-Limit': String(limit),
      'X-RateLimit-Remaining': String(remaining),
      'X-RateLimit-Reset': String(Math.ceil(resetAt / 1000)),
      'RateLimit-Limit': String(limit),
      'RateLimit-Remaining': String(remaining),
      'RateLimit-Reset': String(resetIn),
      'RateLimit-Policy': `${limit};w=${options.windowSeconds}`,
    });
    if (count > limit) {
      rateLimitRefusals.inc();
      throw new RateLimitedError(resetIn);
    }
    await next();
  };
}
