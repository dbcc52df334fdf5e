/**
 * Liveness and readiness. `/healthz` answers while the process runs; `/readyz` pings MongoDB and checks that the
 * Temporal namespace is reachable, answering 503 `Service temporarily unavailable. Please retry.` otherwise. Both
 * checks run at once under one deadline (READY_DEADLINE_MS), so the answer never takes longer than that.
 */
import { withDeadline } from '../lib/deadline';
import { ServiceUnavailableError } from '../lib/errors';
import { pingMongo } from '../lib/mongo';
import { pingTemporal, type TemporalDeps } from '../lib/temporal';
import { renderError } from './middlewares/errors';
import { route, type RouteSpec } from './route';
import { livenessResponse, readinessResponse } from './health.schema';

type Check = 'ok' | 'unavailable';

/** The one deadline of a readiness answer (both checks together). */
export const READY_DEADLINE_MS = 2000;

/**
 * @param deps.temporal the Temporal connection and namespace.
 * @returns the route declarations (mounted at the root).
 */
export function healthRoutes(deps: { temporal: Pick<TemporalDeps, 'connection' | 'namespace'> }): RouteSpec[] {
  return [
    route({
      method: 'get',
      path: '/healthz',
      summary: 'Liveness: the process answers',
      tags: ['Health'],
      auth: 'public',
      responses: { 200: livenessResponse },
      handler: (ctx) => {
        ctx.body = { status: 'ok' };
      },
    }),
    route({
      method: 'get',
      path: '/readyz',
      summary: 'Readiness: MongoDB and Temporal reachable (503 with the checks otherwise)',
      tags: ['Health'],
      auth: 'public',
      responses: { 200: readinessResponse },
      handler: async (ctx) => {
        const deadline = Date.now() + READY_DEADLINE_MS;
        const check = (what: string, ping: (ms: number) => Promise<void>): Promise<void> => {
          const left = deadline - Date.now();
          return withDeadline(ping(left), left, what);
        };
        const [mongo, temporal] = await Promise.all([
          check('MongoDB', (ms) => pingMongo(ms)).then(
            (): Check => 'ok',
            (err: unknown): Check => {
              ctx.state.log.warn({ err }, 'readiness: MongoDB unavailable');
              return 'unavailable';
            }
          ),
          check('Temporal', (ms) => pingTemporal(deps.temporal, ms)).then(
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
    }),
  ];
}
