/**
 * One concurrency key of an organization (issue 39 point 4; docs/fairness.md "Concurrency keys"): `_id`
 * `<organizationId>:<key>`, where the key is `agent:<agentId>` (the agent's maxConcurrentExecutions) or
 * `key:<concurrencyKey>` (a caller's key). `holders` are the executions running under it, at most `limit`;
 * `waiting` the executions queued for it, in the order they came. Claims and releases are single-document atomic
 * updates (activities/executionConcurrency.ts), so any number of service hosts share one limit.
 */
import mongoose, { type InferSchemaType } from 'mongoose';

const schema = new mongoose.Schema(
  {
    _id: { type: String, required: true },
    organizationId: { type: String, required: true },
    /** The limit the last claim asked for. */
    limit: { type: Number, default: 1 },
    holders: { type: [String], default: [] },
    waiting: { type: [String], default: [] },
  },
  { versionKey: false, timestamps: true }
);

export type ConcurrencySlotDoc = InferSchemaType<typeof schema> & { _id: string };
export const ConcurrencySlot = mongoose.model('ConcurrencySlot', schema, 'concurrency_slots');
