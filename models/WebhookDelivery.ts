/**
 * The delivery log (`_id` = event id): one document per event sent to the organization's destination, with each
 * attempt (run, attempt number, HTTP status, latency, error). A redelivery is a new run of the same document.
 * Written only by the delivery workflow's activities, one at a time per event. Expires DELIVERY_LOG_RETENTION after
 * its last write (lib/expiry.ts).
 */
import mongoose, { type InferSchemaType } from 'mongoose';
import { expiringSchema, expiryPaths, registerExpiring } from '../lib/expiry';

export const DELIVERY_STATUSES = ['pending', 'delivered', 'failed'] as const;
export type DeliveryStatus = (typeof DELIVERY_STATUSES)[number];

const attemptSchema = new mongoose.Schema(
  {
    run: { type: Number, required: true },
    attempt: { type: Number, required: true },
    at: { type: Date, required: true },
    /** The receiver's HTTP status; null when no answer came (network error, timeout, refused destination). */
    status: { type: Number, default: null },
    latencyMs: { type: Number, required: true },
    error: { type: String, default: null },
    /** The first 1 KiB of the receiver's answer (WEBHOOK_POLICY.logResponseBytes); null when none came. */
    response: { type: String, default: null },
  },
  { _id: false }
);

const schema = new mongoose.Schema(
  {
    _id: { type: String, required: true },
    organizationId: { type: String, required: true },
    type: { type: String, required: true },
    status: { type: String, enum: DELIVERY_STATUSES, required: true },
    /** Runs so far (1 + redeliveries). */
    run: { type: Number, required: true },
    attempts: { type: [attemptSchema], default: [] },
    /** When the next attempt is due while `pending` after a failed attempt; null otherwise. */
    nextAttemptAt: { type: Date, default: null },
    /** Why the delivery ended without a further attempt (destination disabled, backlog full); null otherwise. */
    error: { type: String, default: null },
    ...expiryPaths,
  },
  { timestamps: true, versionKey: false }
);
schema.index({ organizationId: 1, createdAt: -1, _id: -1 });
expiringSchema(schema);

export type WebhookDeliveryDoc = InferSchemaType<typeof schema> & { _id: string; createdAt: Date; updatedAt: Date };
export const WebhookDelivery = registerExpiring(mongoose.model('WebhookDelivery', schema, 'webhook_deliveries'));
