/** JSON Schemas of the current surface's /api/workspaces. */
import type { Schema } from '../../lib/ajv';
import { SPACE_VISIBILITIES } from '../../models/Space';
import { record, requiredStr, str, timestamp } from '../schemas';
import { spaceVisibility } from '../v1/spaces.schema';

export const workspaceSchema: Schema = record({
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

export const workspaceCreateBody = {
  type: 'object',
  additionalProperties: false,
  required: ['name'],
  properties: {
    name: requiredStr(200),
    description: str(5000),
    visibility: { ...spaceVisibility, description: 'Default `organization`' },
  },
} as const;

export const workspaceResponse = record({ workspace: workspaceSchema });
export const workspaceSelectedResponse = record({
  active_workspace_id: { type: 'string' },
  workspace: workspaceSchema,
});
