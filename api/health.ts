/**
 * Liveness and readiness. `/healthz` answers while the process runs; `/readyz` pings MongoDB and checks that the
 * Temporal namespace is reachable, answering 503 `Service temporarily unavailable. Please retry.` otherwise.
 */
import { pingMongo } from '../lib/mongo';
import { pingTemporal, type TemporalDeps } from '../lib/temporal';
import { ServiceUnavailableError } from '../lib/errors';
import type { RouteSpec } from './route';
import { record } from './schemas';
import { renderError } from './middlewares/errors';

type Check = 'ok' | 'unavailable';

/**
 * @param deps.temporal the Temporal connection and namespace.
 * @returns the route declarations (mounted at the root).
 */
export function healthRoutes(deps: { temporal: Pick<TemporalDeps, 'connection' | 'namespace'> }): RouteSpec[] {
  const check = { type: 'string', enum: ['ok', 'unavailable'] };
  return [
    {
      method: 'get',
      path: '/healthz',
      summary: 'Liveness: the process answers',
      tags: ['Health'],
      auth: 'public',
      responses: { 200: record({ status: { const: 'ok' } }) },
      handler: (ctx) => {
        ctx.body = { status: 'ok' };
      },
    },
    {
      method: 'get',
      path: '/readyz',
      summary: 'Readiness: MongoDB and Temporal reachable (503 with the checks otherwise)',
      tags: ['Health'],
      auth: 'public',
      responses: { 200: record({ status: { const: 'ready' }, checks: record({ mongo: check, temporal: check }) }) },
      handler: async (ctx) => {
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
      },
    },
  ];
}
