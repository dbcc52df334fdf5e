/**
 * JSON Schemas of the client-library endpoints: POST /api/agent/execute and GET /api/usage/organization/{orgId}.
 */
import type { Schema } from '../../lib/ajv';
import { pathParams, record, requiredStr, str } from '../schemas';
import { concurrencyKeyProperties, MAX_MESSAGE_CHARS, runCapProperties } from '../v1/executions.schema';
import { mediaIdList } from '../v1/media.schema';

export const clientExecuteBody = {
  type: 'object',
  additionalProperties: false,
  required: ['characterId', 'message'],
  properties: {
    characterId: requiredStr(100, { description: 'Agent id' }),
    message: requiredStr(MAX_MESSAGE_CHARS),
    spaceId: str(100),
    sessionId: str(100),
    chatId: str(100),
    stream: { type: 'boolean', default: false },
    mediaIds: mediaIdList,
    ...runCapProperties,
    ...concurrencyKeyProperties,
  },
} as const;

export const usageParams = pathParams('orgId');

export const usageQuery = {
  type: 'object',
  additionalProperties: false,
  properties: {
    period: {
      type: 'string',
      enum: ['daily', 'weekly', 'monthly'],
      default: 'daily',
      'x-message': 'Invalid period. Must be: daily, weekly, monthly',
    },
    start: { type: 'string', format: 'date', 'x-message': 'start must be a date (YYYY-MM-DD)' },
    end: { type: 'string', format: 'date', 'x-message': 'end must be a date (YYYY-MM-DD)' },
  },
} as const;

const counters = {
  executions: { type: 'integer' },
  completed: { type: 'integer' },
  failed: { type: 'integer' },
  cancelled: { type: 'integer' },
  input_tokens: { type: 'integer' },
  output_tokens: { type: 'integer' },
  calls: { type: 'integer', description: 'Model calls in the cost ledger' },
  cost_usd: { type: 'number', description: 'Their cost (priced models only; docs/spend.md)' },
};
const agentCounter: Schema = record({ agentId: { type: 'string' }, ...counters });
const modelCounter: Schema = record({
  model: { type: 'string' },
  calls: { type: 'integer' },
  input_tokens: { type: 'integer' },
  output_tokens: { type: 'integer' },
  cost_usd: { type: 'number' },
});

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
      models: { type: 'array', items: modelCounter },
    }),
  },
  agents: { type: 'array', items: agentCounter },
  models: { type: 'array', items: modelCounter },
});
