/**
 * /api/workspaces, the part chats need: create a workspace (the v1 space record, so it is visible on both
 * surfaces) and select the caller's active workspace.
 */
import { createSpace, selectWorkspace, type SpaceInput } from '../../commands/spaces';
import type { Schema } from '../../lib/ajv';
import { SPACE_VISIBILITIES } from '../../models/Space';
import { presentWorkspace } from '../../presenters/space';
import { input, type RouteSpec } from '../route';
import { idParams, record, requiredStr, str, timestamp } from '../schemas';
import { spaceVisibility } from '../v1/spaces.schema';

const tags = ['Workspaces'];

const workspaceSchema: Schema = record({
  id: { type: 'string' },
  organization_id: { type: 'string' },
  name: { type: 'string' },
  description: { type: 'string' },
  owner_id: { type: 'string' },
  visibility: { type: 'string', enum: [...SPACE_VISIBILITIES] },
  is_default: { type: 'boolean' },
  created_at: timestamp,
  updated_at: timestamp,
});

const workspaceCreateBody: Schema = {
  type: 'object',
  additionalProperties: false,
  required: ['name'],
  properties: {
    name: requiredStr(200),
    description: str(5000),
    visibility: { ...spaceVisibility, description: 'Default `organization`' },
  },
};

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
