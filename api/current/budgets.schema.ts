/** JSON Schemas of the current surface's /api/budgets and the ledger of one execution (docs/spend.md). */
import type { Schema } from '../../lib/ajv';
import { BUDGET_PERIODS, BUDGET_SCOPES, BUDGET_UNITS } from '../../models/Budget';
import { nullableStr, oneOfStrings, record, requiredStr, str, timestamp } from '../schemas';

/** Largest limit a budget takes (tokens or USD). */
const MAX_LIMIT = 1e15;

export const budgetCreateBody = {
  type: 'object',
  additionalProperties: false,
  required: ['scope', 'period', 'unit', 'limit'],
  properties: {
    name: str(200),
    scope: oneOfStrings(BUDGET_SCOPES, 'scope', {
      description: 'What the cap covers: the whole organization, one agent or one mission (`target_id`)',
    }),
    target_id: requiredStr(100, { description: 'The agent (scope agent) or the mission (scope mission)' }),
    period: oneOfStrings(BUDGET_PERIODS, 'period', {
      description: 'UTC day, UTC month, or each run (one execution) on its own',
    }),
    unit: oneOfStrings(BUDGET_UNITS, 'unit', {
      description: '`tokens` (input + output + cache) or `usd` (from the price table)',
    }),
    limit: {
      type: 'number',
      exclusiveMinimum: 0,
      maximum: MAX_LIMIT,
      'x-message': 'limit must be a number above 0',
    },
  },
} as const;

export const budgetPatchBody = {
  type: 'object',
  additionalProperties: false,
  minProperties: 1,
  'x-message': 'Send name and/or limit',
  properties: {
    name: str(200),
    limit: budgetCreateBody.properties.limit,
  },
} as const;

const budget: Schema = record({
  id: { type: 'string' },
  name: { type: 'string' },
  scope: { type: 'string', enum: [...BUDGET_SCOPES] },
  target_id: nullableStr,
  period: { type: 'string', enum: [...BUDGET_PERIODS] },
  unit: { type: 'string', enum: [...BUDGET_UNITS] },
  limit: { type: 'number' },
  spent: {
    type: ['number', 'null'],
    description: 'Spent in the current period, in the budget’s unit (null for period run: it counts per execution)',
  },
  percent: { type: ['integer', 'null'] },
  reached: { type: 'boolean' },
  created_at: timestamp,
  updated_at: timestamp,
});

export const budgetResponse: Schema = record({ budget });
export const budgetListResponse: Schema = record({ budgets: { type: 'array', items: budget } });
export const budgetDeletedResponse: Schema = record({ id: { type: 'string' }, deleted: { type: 'boolean' } });

const ledgerEntry: Schema = record({
  id: { type: 'string' },
  execution_id: { type: 'string' },
  parent_execution_id: nullableStr,
  agent_id: { type: 'string' },
  turn: { type: 'integer' },
  job_id: nullableStr,
  mission_id: nullableStr,
  provider: { type: 'string' },
  model: { type: 'string' },
  input_tokens: { type: 'integer' },
  output_tokens: { type: 'integer' },
  cache_read_tokens: { type: ['integer', 'null'] },
  cache_write_tokens: { type: ['integer', 'null'] },
  cost_usd: { type: ['number', 'null'], description: 'null: the price table does not know the model' },
  created_at: timestamp,
});
const ledgerTotal: Schema = record({
  calls: { type: 'integer' },
  input_tokens: { type: 'integer' },
  output_tokens: { type: 'integer' },
  cost_usd: { type: 'number' },
  unpriced_calls: { type: 'integer' },
});

export const executionLedgerResponse: Schema = record({
  execution_id: { type: 'string' },
  entries: { type: 'array', items: ledgerEntry, description: 'This execution’s model calls, in order' },
  own: ledgerTotal,
  total: { ...ledgerTotal, description: 'Its own calls and those of its sub-agents, each counted once' },
});
