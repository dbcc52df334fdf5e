/**
 * Gives every request an id (an incoming `x-request-id` when well-formed, else a new UUID), echoes it on the
 * response, attaches a child logger, and logs one line per request (4xx warn, 5xx error).
 *
 * The child logger is made when something first logs through it (api/requestLog.ts).
 */
import { randomUUID } from 'node:crypto';
import type { Next } from 'koa';
import type { AppContext } from '../context';
import type { Logger } from '../../lib/logger';
import { observeHttp } from '../../lib/metrics';
import { runWithRequestId } from '../../lib/requestContext';
import { traceHttpRequest } from '../../lib/tracing';
import { CODEC_TOKEN_PATH } from '../codec';
import { installRequestLog } from '../requestLog';

const ACCEPTED_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/**
 * @param ctx the request.
 * @returns the template of the route that answered (`/api/v1/agents/:id`), if one did.
 */
const matchedRoute = (ctx: AppContext): string | undefined => (ctx as { _matchedRoute?: string })._matchedRoute;

/**
 * @param logger root logger.
 * @returns the middleware.
 */
export function requestId(logger: Logger) {
  return async function requestIdMiddleware(ctx: AppContext, next: Next): Promise<void> {
    const incoming = ctx.get('x-request-id');
    const id = ACCEPTED_ID.test(incoming) ? incoming : randomUUID();
    ctx.state.requestId = id;
    installRequestLog(ctx, logger, { reqId: id });
    ctx.set('x-request-id', id);
    const started = process.hrtime.bigint();
    try {
      // The work this request starts (workflows, signals) carries its id (lib/requestContext.ts), and joins the
      // request's trace when tracing is on (lib/tracing.ts).
      await traceHttpRequest(ctx.method, ctx.headers, async () => {
        await runWithRequestId(id, next);
        return { route: matchedRoute(ctx), status: ctx.status };
      });
    } finally {
      const ms = Number(process.hrtime.bigint() - started) / 1e6;
      observeHttp(ctx.method, matchedRoute(ctx), ctx.status, ms / 1000);
      const path = CODEC_TOKEN_PATH.test(ctx.path)
        ? ctx.path.replace(CODEC_TOKEN_PATH, '/codec/[redacted]/$1')
        : ctx.path;
      const line = { method: ctx.method, path, status: ctx.status, ms: Math.round(ms * 10) / 10 };
      if (ctx.status >= 500) ctx.state.log.error(line, 'request');
      else if (ctx.status >= 400) ctx.state.log.warn(line, 'request');
      else if (logger.isLevelEnabled('info')) ctx.state.log.info(line, 'request');
    }
  };
}
