/**
 * The current surface (`/api/...` outside /api/v1 and the root well-known paths). Public routes need no token;
 * the others require a `svc_` service token carrying the route's scope.
 */
import Router from '@koa/router';
import type { AppState } from '../context';
import { versionRouter } from './version';

/** @returns the current-surface router. */
export function currentRouter(): Router<AppState> {
  const router = new Router<AppState>({ prefix: '/api' });
  for (const r of [versionRouter()]) router.use(r.routes());
  return router;
}
