/**
 * /api/v1/spaces CRUD, and the client-library endpoints POST /api/spaces/{id}/init and
 * POST|GET /api/spaces/{id}/environment (mounted on the current surface's prefix; see clientRoutes).
 */
import {
  createSpace,
  deleteSpace,
  findModifiableSpace,
  findVisibleSpace,
  initSpace,
  listSpaces,
  withDerivedFields,
  setSpaceEnvironment,
  updateSpace,
  type SpaceInitInput,
  type SpaceInput,
} from '../../commands/spaces';
import { initGitSpace, type RepoInput } from '../../commands/workspaceRepos';
import { ValidationError } from '../../lib/errors';
import { presentSpace } from '../../presenters/space';
import { presentRepo, repoEventsUrl } from '../../presenters/workspaceRepo';
import type { AppDeps } from '../deps';
import { input, type RouteSpec } from '../route';
import { idParams, pageQuery, successMessage } from '../schemas';
import {
  GIT_INIT_FIELDS,
  spaceCreateBody,
  spaceEnvironmentBody,
  spaceEnvironmentResponse,
  spaceInitBody,
  spaceInitResponse,
  spaceListResponse,
  spaceResponse,
  spaceUpdateBody,
} from './spaces.schema';

const tags = ['Spaces'];

/**
 * @param deps configuration (the workspaces root, for deletion).
 * @returns the v1 route declarations.
 */
export function spaceRoutes(deps: Pick<AppDeps, 'config'>): RouteSpec[] {
  return [
    {
      method: 'get',
      path: '/spaces',
      summary: 'List spaces of the organization',
      tags,
      auth: 'v1',
      query: pageQuery(),
      responses: { 200: spaceListResponse },
      handler: async (ctx) => {
        const { items, total, nextCursor } = await listSpaces(
          ctx.state.auth,
          input<unknown, { limit: number; cursor?: string }>(ctx).query
        );
        ctx.body = {
          success: true,
          spaces: (await Promise.all(items.map(withDerivedFields))).map(presentSpace),
          total,
          nextCursor,
        };
      },
    },
    {
      method: 'post',
      path: '/spaces',
      summary: 'Create a space',
      tags,
      auth: 'v1',
      body: spaceCreateBody,
      responses: { 200: spaceResponse },
      handler: async (ctx) => {
        ctx.body = {
          success: true,
          space: presentSpace(await withDerivedFields(await createSpace(ctx.state.auth, input<SpaceInput>(ctx).body))),
        };
      },
    },
    {
      method: 'get',
      path: '/spaces/:id',
      summary: 'Read a space',
      tags,
      auth: 'v1',
      params: idParams,
      responses: { 200: spaceResponse },
      handler: async (ctx) => {
        ctx.body = {
          success: true,
          space: presentSpace(await withDerivedFields(await findVisibleSpace(ctx.state.auth, input(ctx).params.id))),
        };
      },
    },
    {
      method: 'patch',
      path: '/spaces/:id',
      summary: 'Update a space (omitted fields unchanged)',
      tags,
      auth: 'v1',
      params: idParams,
      body: spaceUpdateBody,
      responses: { 200: spaceResponse },
      handler: async (ctx) => {
        const space = await updateSpace(ctx.state.auth, input(ctx).params.id, input<Partial<SpaceInput>>(ctx).body);
        ctx.body = { success: true, space: presentSpace(await withDerivedFields(space)) };
      },
    },
    {
      method: 'delete',
      path: '/spaces/:id',
      summary: 'Delete a space and its files (chats are kept); repeating it finishes a delete cut short',
      tags,
      auth: 'v1',
      params: idParams,
      responses: { 200: successMessage },
      handler: async (ctx) => {
        await deleteSpace(ctx.state.auth, input(ctx).params.id, deps.config.workspacesDir);
        ctx.body = { success: true, message: 'Space deleted successfully' };
      },
    },
  ];
}

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
    {
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
      handler: async (ctx) => {
        const { spaceId } = input<unknown, unknown, { spaceId: string }>(ctx).params;
        const { type, orgId, spaceName, ...mount } = input<SpaceInitInput & Partial<RepoInput>>(ctx).body;
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
        const files = await initSpace(ctx.state.auth, spaceId, { type, orgId, spaceName }, deps.config.workspacesDir);
        ctx.body = { success: true, spaceId, type, files };
      },
    },
    {
      method: 'post',
      path: '/spaces/:spaceId/environment',
      summary: 'Set environment variables (encrypted at rest; null removes one)',
      tags,
      auth: 'client',
      scope: 'workspaces:write',
      params: spaceIdParams,
      body: spaceEnvironmentBody,
      responses: { 200: spaceEnvironmentResponse },
      handler: async (ctx) => {
        const { spaceId } = input<unknown, unknown, { spaceId: string }>(ctx).params;
        const { environmentVariables } = input<{ environmentVariables: Record<string, string | null> }>(ctx).body;
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
    },
    {
      method: 'get',
      path: '/spaces/:spaceId/environment',
      summary: 'List environment variable names (never values)',
      tags,
      auth: 'client',
      scope: 'workspaces:read',
      params: spaceIdParams,
      responses: { 200: spaceEnvironmentResponse },
      handler: async (ctx) => {
        const space = await findModifiableSpace(
          ctx.state.auth,
          input<unknown, unknown, { spaceId: string }>(ctx).params.spaceId
        );
        ctx.body = {
          success: true,
          variables: space.environment.map((v) => ({ name: v.name, updatedAt: v.updatedAt.toISOString() })),
        };
      },
    },
  ];
}
