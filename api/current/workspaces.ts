/**
 * /api/workspaces, the part chats need: create a workspace (the v1 space record, so it is visible on both
 * surfaces) and select the caller's active workspace.
 */
import { createSpace, selectWorkspace, type SpaceInput } from '../../commands/spaces';
import { presentWorkspace } from '../../presenters/space';
import { input, type RouteSpec } from '../route';
import { idParams, record } from '../schemas';
import { workspaceCreateBody, workspaceSchema } from './workspaces.schema';

const tags = ['Workspaces'];

/** @returns the route declarations. */
export function workspaceRoutes(): RouteSpec[] {
  return [
    {
      method: 'post',
      path: '/workspaces',
      summary: 'Create a workspace (the same record as a v1 space)',
      tags,
      auth: 'service',
      scope: 'workspaces:write',
      body: workspaceCreateBody,
      responses: { 201: record({ workspace: workspaceSchema }) },
      handler: async (ctx) => {
        const space = await createSpace(ctx.state.auth, input<SpaceInput>(ctx).body);
        ctx.status = 201;
        ctx.body = { workspace: presentWorkspace(space) };
      },
    },
    {
      method: 'post',
      path: '/workspaces/:id/select',
      summary: 'Make a workspace the caller’s active one (used when a chat or execution names none)',
      tags,
      auth: 'service',
      scope: 'workspaces:write',
      params: idParams,
      responses: {
        200: record({ active_workspace_id: { type: 'string' }, workspace: workspaceSchema }),
      },
      handler: async (ctx) => {
        const space = await selectWorkspace(ctx.state.auth, input(ctx).params.id);
        ctx.body = { active_workspace_id: space._id, workspace: presentWorkspace(space) };
      },
    },
  ];
}
