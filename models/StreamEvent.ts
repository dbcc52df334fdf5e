/**
 * One event of a stream of the durable event log (`_id` = `<streamId>:<seq>`, docs/architecture.md §6): what
 * commands/eventLog.ts appends and reads, always by `_id`. Expires after the stream events' retention (lib/expiry.ts;
 * docs/decisions.md "Retention").
 *
 * The stream and the seq are the two halves of `_id`, not fields of their own (commands/eventLog.ts `eventKey` reads
 * them back): every access is by `_id`, and two more fields cost each event ~60 bytes on the embedded database.
 * Events written before carry them too; nothing reads them.
 */
import mongoose, { type InferSchemaType } from 'mongoose';
import { expiringSchema, expiryPaths, registerExpiring } from '../lib/expiry';

const schema = new mongoose.Schema(
  {
    _id: { type: String, required: true },
    /** SSE event name (`meta`, `message`, `result`, `error`, ...). */
    event: { type: String, required: true },
    data: { type: mongoose.Schema.Types.Mixed, required: true },
    ...expiryPaths,
  },
  { timestamps: { createdAt: true, updatedAt: false }, versionKey: false, minimize: false }
);
expiringSchema(schema);

/** An event of a stream as its writers append it and its readers yield it (commands/eventLog.ts). */
export interface LoggedEvent {
  seq: number;
  event: string;
  data: Record<string, unknown>;
}

export type StreamEventDoc = InferSchemaType<typeof schema> & { _id: string; createdAt: Date };
export const StreamEvent = registerExpiring(mongoose.model('StreamEvent', schema, 'stream_events'));
