/**
 * How far the sweep of expired records has gone in one expiring collection (`_id` = the collection's name): the last
 * expiry bucket swept (commands/expirySweeps.ts; lib/expiry.ts says when a server needs sweeping).
 */
import mongoose from 'mongoose';

const sweepSchema = new mongoose.Schema(
  { _id: { type: String, required: true }, lastBucket: { type: Number, required: true } },
  { versionKey: false }
);
/** One document per expiring collection: the last bucket swept. */
export const ExpirySweep = mongoose.model('ExpirySweep', sweepSchema, 'expiry_sweeps');
