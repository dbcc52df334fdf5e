/**
 * An access token: a v1 personal access token (`td_...`) or a scoped service token (`svc_...`). Only the SHA-256
 * hash of the token is stored; the clear value is shown once at creation.
 */
import mongoose, { type InferSchemaType } from 'mongoose';
import { newId } from '../lib/ids';

/**
 * Scopes of service tokens (SPEC "Authentication"; docs/decisions.md "Scopes"): a read and a write scope per
 * resource of the current surface, `mcp`, and `*` (everything). A write scope implies its read scope
 * (commands/tokens.ts `hasScope`). The scope each route needs is declared on the route (api/route.ts).
 */
export const SCOPES = [
  'agents:read',
  'agents:write',
  'chats:read',
  'chats:write',
  'jobs:read',
  'jobs:write',
  'missions:read',
  'missions:write',
  'webhooks:read',
  'webhooks:write',
  'workspaces:read',
  'workspaces:write',
  'usage:read',
  'budgets:read',
  'budgets:write',
  'mcp',
  '*',
] as const;
export type Scope = (typeof SCOPES)[number];

const schema = new mongoose.Schema(
  {
    _id: { type: String, default: () => newId('tok') },
    kind: { type: String, enum: ['v1', 'service'], required: true },
    name: { type: String, maxlength: 200, default: '' },
    hash: { type: String, required: true },
    /** First characters of the token, for recognising it in lists. */
    hint: { type: String, required: true },
    organizationId: { type: String, required: true },
    userId: { type: String, required: true },
    scopes: { type: [String], default: [] },
    expiresAt: { type: Date, default: null },
    revokedAt: { type: Date, default: null },
    lastUsedAt: { type: Date, default: null },
  },
  { timestamps: true, versionKey: false }
);
schema.index({ hash: 1 }, { unique: true });
schema.index({ organizationId: 1, userId: 1, kind: 1, createdAt: -1, _id: -1 });

export type ApiTokenDoc = InferSchemaType<typeof schema> & { _id: string };
export const ApiToken = mongoose.model('ApiToken', schema, 'api_tokens');
