/**
 * A spending cap of an organization (docs/spend.md, /api/budgets): on the whole organization, one agent or one mission
 * (`scope`, `targetId`), per UTC day, per UTC month or per run (one execution), in tokens (input + output + cache) or
 * in USD (`unit`). `thresholdPeriod` names the last period whose 80 % `budget.threshold` event was recorded (a
 * conditional write claims it: one event per budget per period, whichever process sees the crossing first).
 */
import mongoose, { type InferSchemaType } from 'mongoose';
import { newId } from '../lib/ids';

export const BUDGET_SCOPES = ['organization', 'agent', 'mission'] as const;
export type BudgetScope = (typeof BUDGET_SCOPES)[number];
export const BUDGET_PERIODS = ['day', 'month', 'run'] as const;
export type BudgetPeriod = (typeof BUDGET_PERIODS)[number];
export const BUDGET_UNITS = ['tokens', 'usd'] as const;
export type BudgetUnit = (typeof BUDGET_UNITS)[number];

const schema = new mongoose.Schema(
  {
    _id: { type: String, default: () => newId('bdg') },
    organizationId: { type: String, required: true },
    name: { type: String, maxlength: 200, default: '' },
    scope: { type: String, enum: BUDGET_SCOPES, required: true },
    /** The agent or mission (scope agent / mission); null for the organization. */
    targetId: { type: String, default: null },
    period: { type: String, enum: BUDGET_PERIODS, required: true },
    unit: { type: String, enum: BUDGET_UNITS, required: true },
    limit: { type: Number, required: true },
    thresholdPeriod: { type: String, default: null },
  },
  { timestamps: true, versionKey: false }
);
schema.index({ organizationId: 1, createdAt: 1, _id: 1 });

export type BudgetDoc = InferSchemaType<typeof schema> & { _id: string; createdAt: Date; updatedAt: Date };
export const Budget = mongoose.model('Budget', schema, 'budgets');
