/**
 * One event of a stream of the durable event log (`_id` = `<streamId>:<seq>`, docs/architecture.md §6): what
 * commands/eventLog.ts appends and reads, always by `_id`. Expires after the stream events' retention (lib/expiry.ts;
 * docs/decisions.md "Retention").
 */
import mongoose, { type InferSchemaType } from 'mongoose';
import { expiringSchema, expiryPaths, registerExpiring } from '../lib/expiry';

const schema = new mongoose.Schema(
  {
    _id: { type: String, required: true },
    streamId: { type: String, required: true },
    seq: { type: Number, required: true },
    /** SSE event name (`meta`, `message`, `result`, `error`, ...). */
    event: { type: String, required: true },
    data: { type: mongoose.Schema.Types.Mixed, required: true },
    ...expiryPaths,
  },
  { timestamps: { createdAt: true, updatedAt: false }, versionKey: false, minimize: false }
);
expiringSchema(schema);

export type StreamEventDoc = InferSchemaType<typeof schema> & { _id: string; createdAt: Date };
export const StreamEvent = registerExpiring(mongoose.model('StreamEvent', schema, 'stream_events'));
