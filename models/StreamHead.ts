/**
 * The head of a stream of the durable event log (`_id` = the stream's id): the highest seq whose event, and every
 * earlier one, is written (commands/eventLog.ts raises it after writing the events, so a reader never sees a gap).
 * Heads do not expire.
 */
import mongoose from 'mongoose';

const headSchema = new mongoose.Schema(
  {
    _id: { type: String, required: true },
    /** Highest seq whose event (and every earlier one) is written. */
    lastSeq: { type: Number, required: true },
  },
  { timestamps: { createdAt: false, updatedAt: true }, versionKey: false }
);
export const StreamHead = mongoose.model('StreamHead', headSchema, 'stream_heads');
