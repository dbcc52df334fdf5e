/** JSON Schemas of /api/v1/keys. */
import type { Schema } from '../../lib/ajv';
import { nullableTimestamp, record, timestamp } from '../schemas';

export const keySchema: Schema = record({
  id: { type: 'string' },
  name: { type: 'string' },
  hint: { type: 'string' },
  createdAt: timestamp,
  expiresAt: nullableTimestamp,
  lastUsedAt: nullableTimestamp,
  revokedAt: nullableTimestamp,
});
