/** JSON Schemas of the current surface's /api/oauth-clients. */
import type { Schema } from '../../lib/ajv';
import { nullableTimestamp, record, timestamp } from '../schemas';

export const clientSchema: Schema = record({
  id: { type: 'string' },
  name: { type: 'string' },
  kind: {
    type: 'string',
    enum: ['machine', 'person'],
    description: '`machine`: registered with a service token (client credentials); `person`: authorized by members',
  },
  grant_types: { type: 'array', items: { type: 'string' } },
  redirect_uris: { type: 'array', items: { type: 'string' } },
  created_at: timestamp,
  expires_at: { ...nullableTimestamp, description: 'When the client expires unless it is used again' },
});

export const clientListResponse = record({ clients: { type: 'array', items: clientSchema } });
export const clientDeletedResponse = record({ id: { type: 'string' }, deleted: { const: true } });
