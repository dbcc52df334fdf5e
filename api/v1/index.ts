/** The v1 surface (`/api/v1/...`): every route requires a `td_` personal access token. */
import type { RouteSpec } from '../route';
import { agentRoutes } from './agents';
import type { ExecutionRouteDeps } from '../deps';
import { executionRoutes } from './executions';
import { keyRoutes } from './keys';
import { mcpServerRoutes } from './mcpServers';
import { mediaRoutes } from './media';
import { v1MissionRoutes } from './missions';
import { profileRoutes } from './profile';
import { skillRoutes } from './skills';
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
    ...taskRoutes(deps),
    ...spaceRoutes(deps),
    ...keyRoutes(),
    ...profileRoutes(),
    ...skillRoutes(),
    ...v1MissionRoutes(deps),
    ...mcpServerRoutes(deps),
    ...mediaRoutes(deps.config),
  ];
}
