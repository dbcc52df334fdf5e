/** JSON Schemas of a job's steps and reruns (GET /api/jobs/{id}/steps, POST /api/jobs/{id}/rerun; docs/reruns.md). */
import type { Schema } from '../../lib/ajv';
import { ITERATION_REASONS } from '../../models/Job';
import { nullableStr, oneOfStrings, record, requiredStr } from '../schemas';
import { MAX_MESSAGE_CHARS } from '../v1/executions.schema';

/** A rerun job's origin, in the job's JSON and its lineage (null for a job that is not a rerun). */
export const jobRerunOf: Schema = {
  oneOf: [
    { type: 'null' },
    record({
      job_id: { type: 'string', description: 'The job rerun (left untouched)' },
      iteration: { type: 'integer', description: 'Its iteration the rerun started at' },
      step: { type: 'integer', description: 'The step of that iteration’s execution rerun from' },
      execution_id: { type: 'string', description: 'That iteration’s execution' },
    }),
  ],
  description:
    'A rerun’s origin (POST /api/jobs/{id}/rerun): the iterations before `iteration` are the original’s, taken over as recorded',
};

/** POST /api/jobs/{id}/rerun [docs/decisions.md "Job reruns"]. */
export const jobRerunBody = {
  type: 'object',
  additionalProperties: false,
  required: ['iteration', 'step'],
  properties: {
    iteration: {
      type: 'integer',
      minimum: 1,
      description: 'The iteration holding the step (GET /api/jobs/{id}/steps); the iterations before it are taken over',
    },
    step: {
      type: 'integer',
      minimum: 1,
      description: 'The step of that iteration’s execution to run again: the steps before it are reused, not run again',
    },
    input: requiredStr(MAX_MESSAGE_CHARS, {
      description:
        'A changed input for that iteration: its feedback, input or next step; for the first iteration, a changed goal',
    }),
  },
} as const;

/** GET /api/jobs/{id}/steps. */
export const jobStepsResponse: Schema = record({
  job_id: { type: 'string' },
  iterations: {
    type: 'array',
    items: record({
      n: { type: 'integer' },
      execution_id: { type: 'string' },
      reason: { type: 'string', enum: [...ITERATION_REASONS] },
      status: { type: 'string' },
      steps: {
        oneOf: [
          { type: 'null' },
          {
            type: 'array',
            items: record(
              {
                step: { type: 'integer', description: '1-based, in the order the steps happened' },
                kind: oneOfStrings(['model_turn', 'tool_call'], 'kind'),
                round: { type: 'integer', description: 'The model turn (1-based) the step belongs to' },
                tool_use_id: { type: 'string' },
                name: { type: 'string' },
              },
              ['tool_use_id', 'name']
            ),
          },
        ],
        description: 'Its execution’s steps; null while it runs (`unavailable: running`) or once its stream expired',
      },
      unavailable: { ...nullableStr, description: '`running` or `expired` when `steps` is null' },
    }),
  },
});
