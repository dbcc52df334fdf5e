/**
 * The current surface (`/api/...` outside /api/v1). Public routes need no token; the others require a `svc_`
 * service token carrying the route's scope. The client-library endpoints (`/api/spaces/{id}/init`, ...) accept
 * either token kind.
 */
import type Router from '@koa/router';
import type { AppDeps } from '../app';
import type { AppState } from '../context';
import { mountRoutes, type RouteSpec } from '../route';
import { spaceClientRoutes } from '../v1/spaces';
import { currentAgentRoutes } from './agents';
import { clientExecuteRoutes } from './clientExecute';
import { versionRoutes } from './version';
import { workspaceRoutes } from './workspaces';

export const CURRENT_PREFIX = '/api';

/**
 * @param deps app dependencies.
 * @returns every current-surface route declaration.
 */
export function currentRoutes(deps: AppDeps): RouteSpec[] {
  return [
    ...versionRoutes(),
    ...currentAgentRoutes(),
    ...workspaceRoutes(),
    ...spaceClientRoutes(deps),
    ...clientExecuteRoutes(deps),
  ];
}

/**
 * @param deps app dependencies.
 * @returns the current-surface router.
 */
export function currentRouter(deps: AppDeps): Router<AppState> {
  return mountRoutes(CURRENT_PREFIX, currentRoutes(deps), {
    validateResponses: deps.config.validateResponses,
    rateLimit: { limit: deps.config.rateLimitRequests, windowSeconds: deps.config.rateLimitWindowSeconds },
    idempotency: true,
  });
}
