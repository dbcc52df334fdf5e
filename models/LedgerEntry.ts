/**
 * The cost ledger (docs/spend.md): one entry per model call, append-only. `_id` = `<executionId>:<turn>` (the model
 * call's number in its execution, the same in every attempt), so a call recorded twice (an activity retried after
 * its worker died between the write and the end of the attempt) is one entry: the second insert is a duplicate key.
 * Aggregates are read from {@link SpendRollup}, which a fold raises from the entries still `pending`, never by scanning
 * entries; entries are read per execution tree
 * (`rootExecutionId`) and per organization in time order.
 */
import mongoose, { type InferSchemaType } from 'mongoose';

const schema = new mongoose.Schema(
  {
    _id: { type: String, required: true },
    organizationId: { type: String, required: true },
    agentId: { type: String, required: true },
    executionId: { type: String, required: true },
    /** The execution tree (a sub-agent's entries carry its root's id, so the tree is read by one index). */
    rootExecutionId: { type: String, required: true },
    /** The execution that delegated to this one (a sub-agent's entries only). */
    parentExecutionId: { type: String, default: null },
    // (chatId: written until issue 37, read by nothing; the execution record holds it.) Fields without a value are
    // not written: a missing one reads as its default, null.
    turn: { type: Number, required: true },
    jobId: { type: String, default: null },
    missionId: { type: String, default: null },
    provider: { type: String, required: true },
    model: { type: String, required: true },
    inputTokens: { type: Number, required: true },
    outputTokens: { type: Number, required: true },
    cacheReadTokens: { type: Number, default: null },
    cacheWriteTokens: { type: Number, default: null },
    /** USD from the price table (lib/prices.ts); null: the table does not know the model. */
    costUsd: { type: Number, default: null },
    /** UTC day `YYYY-MM-DD` of the call (its rollup). */
    day: { type: String, required: true },
    createdAt: { type: Date, required: true },
    /**
     * Set when written, removed once a fold has counted the entry in its day's rollup (commands/spendFold.ts): the
     * only change an entry ever sees.
     */
    pending: { type: Boolean },
  },
  { versionKey: false }
);
schema.index({ rootExecutionId: 1 });
schema.index({ organizationId: 1, createdAt: -1, _id: -1 });
/** The fold's scan: the entries not yet counted in their rollup (a few seconds' worth). */
schema.index({ pending: 1 });

export type LedgerEntryDoc = InferSchemaType<typeof schema> & { _id: string };
export const LedgerEntry = mongoose.model('LedgerEntry', schema, 'ledger_entries');
