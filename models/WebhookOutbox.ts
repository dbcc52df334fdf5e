/**
 * Events whose delivery workflow may not have started yet (`_id` = event id). Written before the event itself and
 * removed once Temporal has the workflow `webhook-<eventId>`; the worker's sweep starts whatever is left (Temporal
 * was down, a process died in between) [docs/decisions.md "Webhook delivery"].
 */
import mongoose, { type InferSchemaType } from 'mongoose';

/** The one value of `queue`: the sweep's equality field (FerretDB pushes down only top-level equality). */
export const OUTBOX_QUEUE = 'pending';

const schema = new mongoose.Schema(
  {
    _id: { type: String, required: true },
    organizationId: { type: String, required: true },
    queue: { type: String, required: true, default: OUTBOX_QUEUE },
  },
  { timestamps: { createdAt: true, updatedAt: false }, versionKey: false }
);
schema.index({ queue: 1 });

export type WebhookOutboxDoc = InferSchemaType<typeof schema> & { _id: string; createdAt: Date };
export const WebhookOutbox = mongoose.model('WebhookOutbox', schema, 'webhook_outbox');
