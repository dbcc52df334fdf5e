/**
 * Liveness and readiness. `/healthz` answers while the process runs; `/readyz` pings MongoDB and checks that the
 * Temporal namespace is reachable, answering 503 `Service temporarily unavailable. Please retry.` otherwise.
 */
import Router from '@koa/router';
import { pingMongo } from '../lib/mongo';
import { pingTemporal, type TemporalDeps } from '../lib/temporal';
import { ServiceUnavailableError } from '../lib/errors';
import type { AppState } from './context';
import { renderError } from './middlewares/errors';

type Check = 'ok' | 'unavailable';

/**
 * @param deps.temporal the Temporal connection and namespace.
 * @returns the router.
 */
export function healthRouter(deps: { temporal: Pick<TemporalDeps, 'connection' | 'namespace'> }): Router<AppState> {
  const router = new Router<AppState>();
  router.get('/healthz', (ctx) => {
    ctx.body = { status: 'ok' };
  });
  router.get('/readyz', async (ctx) => {
    const [mongo, temporal] = await Promise.all([
      pingMongo().then(
        (): Check => 'ok',
        (err: unknown): Check => {
          ctx.state.log.warn({ err }, 'readiness: MongoDB unavailable');
          return 'unavailable';
        }
      ),
      pingTemporal(deps.temporal).then(
        (): Check => 'ok',
        (err: unknown): Check => {
          ctx.state.log.warn({ err }, 'readiness: Temporal unavailable');
          return 'unavailable';
        }
      ),
    ]);
    const checks = { mongo, temporal };
    if (mongo === 'ok' && temporal === 'ok') {
      ctx.body = { status: 'ready', checks };
      return;
    }
    renderError(ctx, new ServiceUnavailableError());
    ctx.body = { ...(ctx.body as object), checks };
  });
  return router;
}
