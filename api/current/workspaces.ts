/**
 * /api/workspaces, the part chats need: create a workspace (the v1 space record, so it is visible on both
 * surfaces) and select the caller's active workspace.
 */
import { createSpace, selectWorkspace } from '../../commands/spaces';
import { presentWorkspace } from '../../presenters/space';
import { route, type RouteSpec } from '../route';
import { idParams } from '../schemas';
import { workspaceCreateBody, workspaceResponse, workspaceSelectedResponse } from './workspaces.schema';

const tags = ['Workspaces'];

/** @returns the route declarations. */
export function workspaceRoutes(): RouteSpec[] {
  return [
    route({
      method: 'post',
      path: '/workspaces',
      summary: 'Create a workspace (the same record as a v1 space)',
      tags,
      auth: 'service',
      scope: 'workspaces:write',
      body: workspaceCreateBody,
      responses: { 201: workspaceResponse },
      handler: async (ctx, { body }) => {
        const space = await createSpace(ctx.state.auth, body);
        ctx.status = 201;
        ctx.body = { workspace: presentWorkspace(space) };
      },
    }),
    route({
      method: 'post',
      path: '/workspaces/:id/select',
      summary: 'Make a workspace the caller’s active one (used when a chat or execution names none)',
      tags,
      auth: 'service',
      scope: 'workspaces:write',
      params: idParams,
      responses: { 200: workspaceSelectedResponse },
      handler: async (ctx, { params }) => {
        const space = await selectWorkspace(ctx.state.auth, params.id);
        ctx.body = { active_workspace_id: space._id, workspace: presentWorkspace(space) };
      },
    }),
  ];
}
