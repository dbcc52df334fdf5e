/**
 * The client-library space endpoints on the current surface's prefix: POST /api/spaces/{id}/init and
 * POST|GET /api/spaces/{id}/environment (`td_` or `svc_` tokens).
 */
import { findModifiableSpace, initSpace, setSpaceEnvironment } from '../../commands/spaces';
import { initGitSpace } from '../../commands/workspaceRepos';
import { ValidationError } from '../../lib/errors';
import { presentRepo, repoEventsUrl } from '../../presenters/workspaceRepo';
import type { AppDeps } from '../deps';
import { route, type RouteSpec } from '../route';
import {
  GIT_INIT_FIELDS,
  spaceEnvironmentBody,
  spaceEnvironmentResponse,
  spaceInitBody,
  spaceInitResponse,
} from './spaces.schema';

const tags = ['Spaces'];

const spaceIdParams = {
  type: 'object',
  required: ['spaceId'],
  properties: { spaceId: { type: 'string', minLength: 1, maxLength: 100 } },
};

/**
 * @param deps configuration (workspaces root, encryption key, clone limits) and Temporal (the `git` type's clone).
 * @returns the client-library space routes (prefix /api; `td_` or `svc_` tokens).
 */
export function spaceClientRoutes(deps: Pick<AppDeps, 'config' | 'temporal'>): RouteSpec[] {
  return [
    route({
      method: 'post',
      path: '/spaces/:spaceId/init',
      summary: 'Initialize the space once: empty, readme, starterKit, or git (a durable clone of an https repository)',
      tags,
      auth: 'client',
      scope: 'workspaces:write',
      params: spaceIdParams,
      body: spaceInitBody,
      responses: { 200: spaceInitResponse },
      errors: [409],
      handler: async (ctx, { params, body }) => {
        const { spaceId } = params;
        const { type, orgId, spaceName, ...mount } = body;
        if (type === 'git') {
          const repo = await initGitSpace(deps, ctx.state.auth, spaceId, { orgId, spaceName, ...mount });
          ctx.body = {
            success: true,
            spaceId,
            type,
            files: [],
            repo: presentRepo(repo),
            eventsUrl: repoEventsUrl(repo),
          };
          return;
        }
        const gitOnly = GIT_INIT_FIELDS.find((f) => mount[f] !== undefined);
        if (gitOnly) throw new ValidationError(`Field ${gitOnly} is accepted only with type git`);
        const files = await initSpace(ctx.state.auth, spaceId, { type, orgId, spaceName }, deps.config);
        ctx.body = { success: true, spaceId, type, files };
      },
    }),
    route({
      method: 'post',
      path: '/spaces/:spaceId/environment',
      summary: 'Set environment variables (encrypted at rest; null removes one)',
      tags,
      auth: 'client',
      scope: 'workspaces:write',
      params: spaceIdParams,
      body: spaceEnvironmentBody,
      responses: { 200: spaceEnvironmentResponse },
      handler: async (ctx, { params, body }) => {
        const { spaceId } = params;
        const { environmentVariables } = body;
        const variables = await setSpaceEnvironment(
          ctx.state.auth,
          spaceId,
          environmentVariables,
          deps.config.encryptionKey
        );
        ctx.body = {
          success: true,
          variables: variables.map((v) => ({ name: v.name, updatedAt: v.updatedAt.toISOString() })),
        };
      },
    }),
    route({
      method: 'get',
      path: '/spaces/:spaceId/environment',
      summary: 'List environment variable names (never values)',
      tags,
      auth: 'client',
      scope: 'workspaces:read',
      params: spaceIdParams,
      responses: { 200: spaceEnvironmentResponse },
      handler: async (ctx, { params }) => {
        const space = await findModifiableSpace(ctx.state.auth, params.spaceId);
        ctx.body = {
          success: true,
          variables: space.environment.map((v) => ({ name: v.name, updatedAt: v.updatedAt.toISOString() })),
        };
      },
    }),
  ];
}
