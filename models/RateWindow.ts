/**
 * One identity's request count in one rate-limit window (`_id` = `<organizationId>:<userId>:<windowStart>`), so
 * counting a request is one `_id`-keyed upsert, index-served on every server. Expires after its window
 * (lib/expiry.ts).
 */
import mongoose, { type InferSchemaType } from 'mongoose';
import { expiringSchema, expiryPaths, registerExpiring } from '../lib/expiry';

const schema = new mongoose.Schema(
  {
    _id: { type: String, required: true },
    count: { type: Number, required: true },
    ...expiryPaths,
  },
  { versionKey: false }
);
expiringSchema(schema);

export type RateWindowDoc = InferSchemaType<typeof schema> & { _id: string };
export const RateWindow = registerExpiring(mongoose.model('RateWindow', schema, 'rate_windows'));
