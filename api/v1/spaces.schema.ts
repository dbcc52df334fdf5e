/** JSON Schemas of /api/v1/spaces. */
import type { Schema } from '../../lib/ajv';
import { SPACE_INIT_TYPES, SPACE_VISIBILITIES } from '../../models/Space';
import { nextCursor, record, requiredStr, str, strArray, timestamp } from '../schemas';

/** Space visibility with the error message both surfaces use. */
export const spaceVisibility = {
  type: 'string',
  enum: [...SPACE_VISIBILITIES],
  'x-message': 'Invalid visibility value. Must be: private, organization, or public',
} as const;

const fields = {
  description: str(5000),
  visibility: spaceVisibility,
  assignedAgents: strArray(),
  skillIds: strArray(),
  pluginIds: strArray(),
};

export const spaceCreateBody = {
  type: 'object',
  additionalProperties: false,
  required: ['name'],
  properties: { name: requiredStr(200), ...fields },
} as const;

export const spaceUpdateBody = {
  type: 'object',
  additionalProperties: false,
  properties: { name: requiredStr(200), ...fields },
} as const;

export const spaceSchema: Schema = record({
  id: { type: 'string' },
  organizationId: { type: 'string' },
  name: { type: 'string' },
  description: { type: 'string' },
  ownerId: { type: 'string' },
  visibility: { type: 'string', enum: [...SPACE_VISIBILITIES] },
  assignedAgents: strArray(),
  skillIds: strArray(),
  pluginIds: strArray(),
  chatCount: { type: 'integer' },
  fileCount: { type: 'integer' },
  isDefault: { type: 'boolean' },
  initializedAs: { type: ['string', 'null'], enum: [...SPACE_INIT_TYPES, null] },
  environmentVariables: strArray(1000),
  createdAt: timestamp,
  updatedAt: timestamp,
});

export const spaceResponse: Schema = record({ success: { type: 'boolean' }, space: spaceSchema });
export const spaceListResponse: Schema = record({
  success: { type: 'boolean' },
  spaces: { type: 'array', items: spaceSchema },
  total: { type: 'integer' },
  nextCursor,
});
