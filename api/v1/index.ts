/** The v1 surface (`/api/v1/...`): every route requires a `td_` personal access token. */
import type Router from '@koa/router';
import type { AppDeps } from '../app';
import type { AppState } from '../context';
import { mountRoutes, type RouteSpec } from '../route';
import { agentRoutes } from './agents';
import { executionRoutes, type ExecutionRouteDeps } from './executions';
import { keyRoutes } from './keys';
import { profileRoutes } from './profile';
import { spaceRoutes } from './spaces';
import { taskRoutes } from './tasks';

export const V1_PREFIX = '/api/v1';

/**
 * @param deps app dependencies.
 * @returns every v1 route declaration (also used by the OpenAPI document).
 */
export function v1Routes(deps: ExecutionRouteDeps): RouteSpec[] {
  return [
    ...agentRoutes(),
    ...executionRoutes(deps),
    ...taskRoutes(),
    ...spaceRoutes(),
    ...keyRoutes(),
    ...profileRoutes(),
  ];
}

/**
 * @param deps app dependencies.
 * @returns the v1 router.
 */
export function v1Router(deps: AppDeps): Router<AppState> {
  return mountRoutes(V1_PREFIX, v1Routes(deps), { validateResponses: deps.config.validateResponses });
}
