/**
 * An organization's spend of one UTC day (`_id` = `<organizationId>:<YYYY-MM-DD>`), raised by the folds of the ledger's
 * entries (commands/spendFold.ts): totals, and the same per agent, per model and per mission (maps keyed by id or by the model's
 * name with `.` and `$` escaped). Its size is bounded by the organization's agents, models and missions, not by its
 * calls: the usage report and the budgets read at most one document per day (docs/query-shapes.md).
 */
import mongoose, { type InferSchemaType } from 'mongoose';

const schema = new mongoose.Schema(
  {
    _id: { type: String, required: true },
    organizationId: { type: String, required: true },
    day: { type: String, required: true },
    calls: { type: Number, default: 0 },
    inputTokens: { type: Number, default: 0 },
    outputTokens: { type: Number, default: 0 },
    cacheReadTokens: { type: Number, default: 0 },
    cacheWriteTokens: { type: Number, default: 0 },
    costUsd: { type: Number, default: 0 },
    /** Calls of models the price table does not know (their cost is not in costUsd). */
    unpricedCalls: { type: Number, default: 0 },
    agents: { type: mongoose.Schema.Types.Mixed, default: {} },
    models: { type: mongoose.Schema.Types.Mixed, default: {} },
    missions: { type: mongoose.Schema.Types.Mixed, default: {} },
    /**
     * The last fold that raised it (commands/spendFold.ts): its id, which the next fold's conditional write names,
     * and the ids of the entries it counted, which no later fold counts again.
     */
    lastFold: { type: mongoose.Schema.Types.Mixed },
  },
  { versionKey: false, minimize: false }
);
schema.index({ organizationId: 1, day: 1 });

export type SpendRollupDoc = InferSchemaType<typeof schema> & { _id: string };
export const SpendRollup = mongoose.model('SpendRollup', schema, 'spend_rollups');
