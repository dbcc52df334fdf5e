/** GET /api/version: metadata of the deployed version (public). */
import Router from '@koa/router';
import type { AppState } from '../context';
import { buildInfo } from '../../lib/version';

/** @returns the router. */
export function versionRouter(): Router<AppState> {
  const router = new Router<AppState>();
  router.get('/version', (ctx) => {
    ctx.body = buildInfo();
  });
  return router;
}
