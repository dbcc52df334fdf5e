/**
 * The current surface (`/api/...` outside /api/v1). Public routes need no token; the others require a `svc_`
 * service token carrying the route's scope. The client-library endpoints (`/api/spaces/{id}/init`, ...) accept
 * either token kind.
 */
import type { AppDeps } from '../deps';
import type { RouteSpec } from '../route';
import { currentAgentRoutes } from './agents';
import { budgetRoutes } from './budgets';
import { chatRoutes } from './chats';
import { clientExecuteRoutes } from './clientExecute';
import { organizationEventRoutes } from './events';
import { jobRoutes } from './jobs';
import { missionRoutes } from './missions';
import { oauthClientRoutes } from './oauthClients';
import { contractRoutes, type Contract } from './contract';
import { dataBlockRoutes } from './dataBlocks';
import { workspaceFileRoutes } from './workspaceFiles';
import { webhookRoutes } from './webhooks';
import { sessionRoutes } from './session';
import { ssoRoutes } from './sso';
import { spaceClientRoutes } from './spaces';
import { workspaceRepoRoutes } from './workspaceRepos';
import { workspaceRoutes } from './workspaces';

export const CURRENT_PREFIX = '/api';

/**
 * @param deps app dependencies.
 * @param contract the OpenAPI document (served by the contract routes).
 * @returns every current-surface route declaration.
 */
export function currentRoutes(deps: AppDeps, contract: () => Contract): RouteSpec[] {
  return [
    ...contractRoutes(deps.config, contract),
    ...sessionRoutes(deps),
    ...ssoRoutes(deps),
    ...currentAgentRoutes(),
    ...workspaceRoutes(),
    ...chatRoutes(deps),
    ...organizationEventRoutes(deps),
    ...jobRoutes(deps),
    ...missionRoutes(deps),
    ...workspaceFileRoutes(deps.config),
    ...dataBlockRoutes(deps.config),
    ...workspaceRepoRoutes(deps),
    ...spaceClientRoutes(deps),
    ...clientExecuteRoutes(deps),
    ...budgetRoutes(deps),
    ...webhookRoutes(deps),
    ...oauthClientRoutes(),
  ];
}
