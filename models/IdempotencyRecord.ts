/**
 * A mutating current-surface request made with an `Idempotency-Key` (api/middlewares/idempotency.ts), kept for
 * 24 hours per identity and key: `_id` = `<organizationId>:<userId>:<sha256 of the key>`, so the lookup, the claim
 * (an insert) and the completion are `_id`-keyed, index-served on every server. Expires (lib/expiry.ts).
 */
import mongoose, { type InferSchemaType } from 'mongoose';
import { expiringSchema, expiryPaths, registerExpiring } from '../lib/expiry';

const schema = new mongoose.Schema(
  {
    _id: { type: String, required: true },
    /** SHA-256 of method, path and canonical JSON body: the same key with another request is refused. */
    fingerprint: { type: String, required: true },
    state: { type: String, enum: ['running', 'done'], required: true },
    /** Until when a `running` record holds the key (after it, the request is presumed lost with its process). */
    lockedUntil: { type: Date, required: true },
    /**
     * The stored answer, JSON `{status, body, headers}` (a string: response bodies may hold keys MongoDB refuses),
     * or `{streamed: true}` when the first answer was an event stream, which cannot be replayed.
     */
    response: { type: String, default: null },
    ...expiryPaths,
  },
  { timestamps: true, versionKey: false }
);
expiringSchema(schema);

export type IdempotencyRecordDoc = InferSchemaType<typeof schema> & { _id: string };
export const IdempotencyRecord = registerExpiring(mongoose.model('IdempotencyRecord', schema, 'idempotency_records'));
