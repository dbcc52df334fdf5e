/** JSON Schemas of the liveness and readiness answers (api/health.ts). */
import { record } from './schemas';

const checkSchema = { type: 'string', enum: ['ok', 'unavailable'] } as const;

export const livenessResponse = record({ status: { const: 'ok' } });
export const readinessResponse = record({
  status: { const: 'ready' },
  checks: record({ mongo: checkSchema, temporal: checkSchema }),
});
