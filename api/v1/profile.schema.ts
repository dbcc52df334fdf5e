/** JSON Schemas of /api/v1/profile. */
import type { Schema } from '../../lib/ajv';
import { httpUrl, nullableStr, record, requiredStr, strArray, timestamp } from '../schemas';

const userSchema: Schema = record({
  id: { type: 'string' },
  email: { type: 'string' },
  name: nullableStr,
  avatarUrl: nullableStr,
  createdAt: timestamp,
  updatedAt: timestamp,
});

const organizationSchema: Schema = record(
  {
    id: { type: 'string' },
    name: { type: 'string' },
    logoUrl: { type: 'string' },
    ownerId: { type: 'string' },
    members: strArray(100_000),
    subscription: record({
      tier: { type: 'string', enum: ['free', 'pro', 'enterprise'] },
      status: { type: 'string', enum: ['active', 'cancelled', 'expired'] },
    }),
    createdAt: timestamp,
    updatedAt: timestamp,
  },
  ['logoUrl']
);

export const profileResponse: Schema = record({
  success: { type: 'boolean' },
  user: userSchema,
  organization: organizationSchema,
  role: { type: 'string', enum: ['owner', 'admin', 'member'] },
});

export const profileUpdateBody = {
  type: 'object',
  additionalProperties: false,
  properties: { name: requiredStr(200), avatarUrl: httpUrl(2000) },
} as const;
