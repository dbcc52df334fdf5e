/**
 * /api/v1/spaces CRUD (the client-library endpoints under /api/spaces are api/current/spaces.ts).
 */
import {
  createSpace,
  deleteSpace,
  findVisibleSpace,
  listSpaces,
  withDerivedFields,
  updateSpace,
} from '../../commands/spaces';
import { presentSpace } from '../../presenters/space';
import type { AppDeps } from '../deps';
import { route, type RouteSpec } from '../route';
import { idParams, pageQuery, successMessage } from '../schemas';
import { spaceCreateBody, spaceListResponse, spaceResponse, spaceUpdateBody } from './spaces.schema';

const tags = ['Spaces'];

/**
 * @param deps configuration (the workspaces root, for deletion).
 * @returns the v1 route declarations.
 */
export function spaceRoutes(deps: Pick<AppDeps, 'config'>): RouteSpec[] {
  return [
    route({
      method: 'get',
      path: '/spaces',
      summary: 'List spaces of the organization',
      tags,
      auth: 'v1',
      query: pageQuery(),
      responses: { 200: spaceListResponse },
      handler: async (ctx, { query }) => {
        const { items, total, nextCursor } = await listSpaces(ctx.state.auth, query);
        ctx.body = {
          success: true,
          spaces: (await Promise.all(items.map(withDerivedFields))).map(presentSpace),
          total,
          nextCursor,
        };
      },
    }),
    route({
      method: 'post',
      path: '/spaces',
      summary: 'Create a space',
      tags,
      auth: 'v1',
      body: spaceCreateBody,
      responses: { 200: spaceResponse },
      handler: async (ctx, { body }) => {
        ctx.body = {
          success: true,
          space: presentSpace(await withDerivedFields(await createSpace(ctx.state.auth, body))),
        };
      },
    }),
    route({
      method: 'get',
      path: '/spaces/:id',
      summary: 'Read a space',
      tags,
      auth: 'v1',
      params: idParams,
      responses: { 200: spaceResponse },
      handler: async (ctx, { params }) => {
        ctx.body = {
          success: true,
          space: presentSpace(await withDerivedFields(await findVisibleSpace(ctx.state.auth, params.id))),
        };
      },
    }),
    route({
      method: 'patch',
      path: '/spaces/:id',
      summary: 'Update a space (omitted fields unchanged)',
      tags,
      auth: 'v1',
      params: idParams,
      body: spaceUpdateBody,
      responses: { 200: spaceResponse },
      handler: async (ctx, { params, body }) => {
        const space = await updateSpace(ctx.state.auth, params.id, body);
        ctx.body = { success: true, space: presentSpace(await withDerivedFields(space)) };
      },
    }),
    route({
      method: 'delete',
      path: '/spaces/:id',
      summary: 'Delete a space and its files (chats are kept); repeating it finishes a delete cut short',
      tags,
      auth: 'v1',
      params: idParams,
      responses: { 200: successMessage },
      handler: async (ctx, { params }) => {
        await deleteSpace(ctx.state.auth, params.id, deps.config.workspacesDir);
        ctx.body = { success: true, message: 'Space deleted successfully' };
      },
    }),
  ];
}
