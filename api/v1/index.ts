/** The v1 surface (`/api/v1/...`): every route requires a `td_` personal access token. */
import Router from '@koa/router';
import type { AppState } from '../context';
import { authenticate } from '../middlewares/auth';
import { profileRouter } from './profile';

/** @returns the v1 router. */
export function v1Router(): Router<AppState> {
  const router = new Router<AppState>({ prefix: '/api/v1' });
  router.use(authenticate('v1'));
  for (const r of [profileRouter()]) router.use(r.routes());
  return router;
}
