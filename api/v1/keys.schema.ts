/** JSON Schemas of /api/v1/keys. */
import type { Schema } from '../../lib/ajv';
import { nextCursor, nullableTimestamp, record, requiredStr, timestamp } from '../schemas';

export const keySchema: Schema = record({
  id: { type: 'string' },
  name: { type: 'string' },
  hint: { type: 'string' },
  createdAt: timestamp,
  expiresAt: nullableTimestamp,
  lastUsedAt: nullableTimestamp,
  revokedAt: nullableTimestamp,
});

export const keyListResponse = record({
  success: { type: 'boolean' },
  keys: { type: 'array', items: keySchema },
  nextCursor,
});
export const keyCreateBody = {
  type: 'object',
  additionalProperties: false,
  required: ['name'],
  properties: { name: requiredStr(200), expiresAt: { type: 'string', format: 'date-time', maxLength: 40 } },
} as const;
export const keyCreatedResponse = record({
  success: { type: 'boolean' },
  key: keySchema,
  token: { type: 'string', pattern: '^td_' },
});
