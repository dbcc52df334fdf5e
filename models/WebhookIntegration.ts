/**
 * An organization's webhook destination (`_id` = organizationId; one per organization, SPEC "Webhook delivery"):
 * the https URL, whether delivery is on, the event types it wants (null: all) and its signing secrets, sealed
 * with AES-256-GCM (lib/crypto.ts). During a rotation's grace period the previous secret stays, with `expiresAt`.
 */
import mongoose, { type InferSchemaType } from 'mongoose';

const secretSchema = new mongoose.Schema(
  {
    sealed: { type: String, required: true },
    createdAt: { type: Date, required: true },
    /** null: the current secret; a date: a rotated-out secret that still signs until then. */
    expiresAt: { type: Date, default: null },
  },
  { _id: false }
);

const schema = new mongoose.Schema(
  {
    _id: { type: String, required: true },
    url: { type: String, required: true },
    enabled: { type: Boolean, required: true },
    /** null: every event type. */
    eventTypes: { type: [String], default: null },
    secrets: { type: [secretSchema], default: [] },
    /**
     * Set when delivery disabled itself (every attempt failed for WEBHOOK_DISABLE_AFTER): when, why and the id of the
     * recorded `webhook.disabled` event; cleared by the next PUT.
     */
    disabled: {
      type: new mongoose.Schema(
        { at: { type: Date, required: true }, reason: { type: String, required: true }, eventId: String },
        { _id: false }
      ),
      default: null,
    },
  },
  { timestamps: true, versionKey: false }
);

export type WebhookIntegrationDoc = InferSchemaType<typeof schema> & { _id: string; createdAt: Date; updatedAt: Date };
export const WebhookIntegration = mongoose.model('WebhookIntegration', schema, 'webhook_integrations');
