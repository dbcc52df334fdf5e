/**
 * A durable service event (`evt_…`): one state change of a job, mission, execution, chat or task, recorded once by
 * commands/serviceEvents.ts `recordEvent` and delivered to webhooks (SPEC "Webhook delivery"). Its public body is
 * `{id, type, createdAt, organizationId, data}` (presenters: `serviceEventBody`). Expires DELIVERY_LOG_RETENTION
 * after it was recorded, with its delivery log (lib/expiry.ts).
 */
import mongoose, { type InferSchemaType } from 'mongoose';
import { expiringSchema, expiryPaths, registerExpiring } from '../lib/expiry';

const schema = new mongoose.Schema(
  {
    _id: { type: String, required: true },
    organizationId: { type: String, required: true },
    type: { type: String, required: true },
    /** The event's `data`, stored as JSON text so that any key (dots, `$`) survives the database. */
    data: { type: String, required: true },
    ...expiryPaths,
  },
  { timestamps: { createdAt: true, updatedAt: false }, versionKey: false }
);
schema.index({ organizationId: 1, createdAt: -1, _id: -1 });
expiringSchema(schema);

export type ServiceEventDoc = InferSchemaType<typeof schema> & { _id: string; createdAt: Date };
export const ServiceEvent = registerExpiring(mongoose.model('ServiceEvent', schema, 'service_events'));
