/** JSON Schemas of the client-library usage endpoint (GET /api/usage/organization/{orgId}). */
import type { Schema } from '../../lib/ajv';
import { record } from '../schemas';

const counters = {
  executions: { type: 'integer' },
  completed: { type: 'integer' },
  failed: { type: 'integer' },
  cancelled: { type: 'integer' },
  input_tokens: { type: 'integer' },
  output_tokens: { type: 'integer' },
};
const agentCounter: Schema = record({ agentId: { type: 'string' }, ...counters });

export const usageResponse: Schema = record({
  success: { type: 'boolean' },
  organizationId: { type: 'string' },
  period: { type: 'string', enum: ['daily', 'weekly', 'monthly'] },
  start: { type: 'string', format: 'date' },
  end: { type: 'string', format: 'date' },
  totals: record(counters),
  periods: {
    type: 'array',
    items: record({
      start: { type: 'string', format: 'date' },
      ...counters,
      agents: { type: 'array', items: agentCounter },
    }),
  },
  agents: { type: 'array', items: agentCounter },
});
