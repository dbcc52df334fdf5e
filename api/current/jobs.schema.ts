/** JSON Schemas of the current surface's /api/jobs (requests, responses, and the job stream's events). */
import type { Schema } from '../../lib/ajv';
import { ITERATION_REASONS, JOB_STATUSES, REVIEW_STATES } from '../../models/Job';
import {
  expiredEvent,
  nextCursor,
  nullableError,
  nullableStr,
  oneOfStrings,
  nullableTimestamp,
  pageQuery,
  record,
  requiredStr,
  str,
} from '../schemas';
import { MAX_MESSAGE_CHARS } from '../v1/executions.schema';
import { MAX_JOB_DECISIONS } from '../../commands/jobs';

/** Events replayed to a client that names no position (`Last-Event-ID`): the stream's last ones. */
export const JOB_REPLAY_EVENTS = 100;

const jobStatus = oneOfStrings(JOB_STATUSES, 'status');

export const jobCreateBody = {
  type: 'object',
  additionalProperties: false,
  required: ['agent_id', 'goal'],
  properties: {
    agent_id: requiredStr(100, { description: 'An agent of the organization' }),
    workspace_id: requiredStr(100, {
      description: 'A workspace of the organization; default: the caller’s active workspace (else 400)',
    }),
    goal: requiredStr(MAX_MESSAGE_CHARS, { description: 'What the agent works toward (its first iteration’s input)' }),
    title: requiredStr(200, { description: 'Default: the start of the goal' }),
    parent_job_id: requiredStr(100, { description: 'A job of the organization this job belongs under' }),
    metadata: {
      type: 'object',
      maxProperties: 50,
      additionalProperties: { type: 'string', maxLength: 1000 },
      description: 'Free key → string values, returned as given',
    },
  },
} as const;

export const jobListQuery = pageQuery({
  status: jobStatus,
  mission_id: str(100),
  agent_id: str(100),
  chat_id: str(100),
});

/**
 * The body of a job action: at most the one text field `field` names (required or not), nothing else.
 * @param field the field, or null (no body fields).
 * @param description what the field holds.
 * @param required whether the action needs it.
 */
export const actionBody = (field: string | null, description: string, required: boolean) =>
  ({
    type: 'object',
    additionalProperties: false,
    required: field && required ? [field] : [],
    properties: (field ? { [field]: requiredStr(MAX_MESSAGE_CHARS, { description }) } : {}) as Record<
      string,
      ReturnType<typeof requiredStr>
    >,
  }) as const;
export const approveBody = actionBody(
  'next_step',
  'Optional: the next step; the job runs another iteration with it instead of completing',
  false
);
export const iterateBody = actionBody('feedback', 'The reviewer’s feedback: the next iteration’s input', true);
export const resumeBody = actionBody('input', 'The input the agent asked for: the next iteration’s input', true);
export const cancelBody = actionBody(null, '', false);

/** The text field each action takes (none for cancel). */
export const ACTION_TEXT_FIELDS = { approve: 'next_step', iterate: 'feedback', resume: 'input', cancel: null } as const;

/** POST /api/jobs/decisions: one decision on up to MAX_JOB_DECISIONS jobs. */
export const jobDecisionsBody = {
  type: 'object',
  additionalProperties: false,
  required: ['action', 'job_ids'],
  properties: {
    action: { type: 'string', enum: ['approve', 'iterate', 'resume', 'cancel'] },
    job_ids: {
      type: 'array',
      minItems: 1,
      maxItems: MAX_JOB_DECISIONS,
      uniqueItems: true,
      items: requiredStr(100),
      description: 'The jobs to decide, each once',
    },
    next_step: requiredStr(MAX_MESSAGE_CHARS, { description: 'approve: as POST /api/jobs/{id}/approve' }),
    feedback: requiredStr(MAX_MESSAGE_CHARS, { description: 'iterate (required): as POST /api/jobs/{id}/iterate' }),
    input: requiredStr(MAX_MESSAGE_CHARS, { description: 'resume (required): as POST /api/jobs/{id}/resume' }),
  },
} as const;

const iso = nullableTimestamp;
export const jobSchema: Schema = record({
  id: { type: 'string' },
  organization_id: { type: 'string' },
  title: { type: 'string' },
  goal: { type: 'string' },
  status: { type: 'string', enum: [...JOB_STATUSES] },
  agent_id: { type: 'string' },
  workspace_id: { type: 'string' },
  created_by: { type: 'string' },
  review: record({
    state: { type: 'string', enum: [...REVIEW_STATES] },
    requested_at: iso,
    feedback: nullableStr,
  }),
  question: { ...nullableStr, description: 'What the agent asked while `blocked`' },
  iterations: {
    type: 'array',
    items: record({
      n: { type: 'integer' },
      execution_id: { type: 'string' },
      reason: { type: 'string', enum: [...ITERATION_REASONS] },
      input: { type: 'string' },
      status: { type: 'string' },
      started_at: iso,
      completed_at: iso,
    }),
  },
  artifacts: {
    type: 'array',
    items: record({
      id: { type: 'string' },
      name: { type: 'string' },
      kind: { type: 'string' },
      execution_id: nullableStr,
      content: { type: 'string' },
      updated_at: iso,
    }),
  },
  error: nullableError,
  metadata: { type: 'object' },
  links: record({
    chat_id: { type: 'string' },
    mission_id: nullableStr,
    mission_run_id: nullableStr,
    task_id: nullableStr,
    parent_job_id: nullableStr,
    execution_ids: { type: 'array', items: { type: 'string' } },
  }),
  created_at: iso,
  updated_at: iso,
  started_at: iso,
  completed_at: iso,
});

const jobRef: Schema = record({
  id: { type: 'string' },
  title: { type: 'string' },
  status: { type: 'string', enum: [...JOB_STATUSES] },
  created_at: iso,
});

export const jobResponse: Schema = record({ job: jobSchema });
/** The answer of POST /api/jobs/decisions: one result per job named, in the order named. */
export const jobDecisionsResponse: Schema = record({
  results: {
    type: 'array',
    items: record(
      {
        job_id: { type: 'string' },
        ok: { type: 'boolean', description: 'Whether the decision was taken' },
        job: jobSchema,
        error: record(
          {
            code: { type: 'string' },
            message: { type: 'string' },
            status: { type: 'integer', description: 'The status the single-job route would have answered' },
            current_state: { type: 'string' },
          },
          ['current_state']
        ),
      },
      ['job', 'error']
    ),
  },
});
export const jobListResponse: Schema = record({ jobs: { type: 'array', items: jobSchema }, next_cursor: nextCursor });
export const jobLineageResponse: Schema = record({
  job: jobRef,
  parent: { oneOf: [{ type: 'null' }, jobRef] },
  children: { type: 'array', items: jobRef },
  iterations: {
    type: 'array',
    items: record({
      n: { type: 'integer' },
      execution_id: { type: 'string' },
      parent_execution_id: nullableStr,
      reason: { type: 'string', enum: [...ITERATION_REASONS] },
      status: { type: 'string' },
    }),
  },
  mission_run: {
    oneOf: [{ type: 'null' }, record({ mission_id: { type: 'string' }, run_id: nullableStr })],
  },
  task_id: nullableStr,
});

export const transcriptQuery = {
  type: 'object',
  additionalProperties: false,
  properties: {
    limit: { type: 'integer', minimum: 1, maximum: 1000, default: 100, description: 'Events per page' },
    cursor: {
      type: 'string',
      pattern: '^[0-9]{1,6}:[0-9]{1,9}$',
      'x-message': 'Invalid cursor',
      description: 'next_cursor of the previous page (`<iteration>:<seq>`)',
    },
  },
} as const;
export const transcriptResponse: Schema = record({
  job_id: { type: 'string' },
  events: {
    type: 'array',
    items: record({
      iteration: { type: 'integer' },
      execution_id: { type: 'string' },
      seq: { type: 'integer' },
      event: { type: 'string' },
      data: { type: 'object' },
    }),
    description:
      'Each iteration’s execution stream (meta, message, result | error; `expired` for events past their retention), iterations in order',
  },
  next_cursor: nextCursor,
});

/** The text/event-stream answer of GET /api/jobs/{id}/events. */
export const jobEventsResponse: Schema = {
  sse: true,
  description:
    'text/event-stream: the job’s events after Last-Event-ID (else its last ' +
    `${JOB_REPLAY_EVENTS}), then live; ends after the job.status event of a finished job`,
};

const jobId = { job_id: { type: 'string' } };

/** The job stream's events (written by activities/jobs.ts). */
export const jobStreamEvents: Record<string, Schema> = {
  'job.status': record({
    ...jobId,
    title: { type: 'string' },
    agent_id: { type: 'string' },
    mission_id: nullableStr,
    task_id: nullableStr,
    status: { type: 'string', enum: [...JOB_STATUSES] },
    previous_status: { oneOf: [{ type: 'null' }, { type: 'string', enum: [...JOB_STATUSES] }] },
    iteration: { type: 'integer' },
    execution_id: nullableStr,
    review_state: { type: 'string', enum: [...REVIEW_STATES] },
    question: nullableStr,
    error: nullableError,
  }),
  'transcript.output': record({
    ...jobId,
    iteration: { type: 'integer' },
    execution_id: { type: 'string' },
    status: { type: 'string' },
    text: { type: 'string' },
  }),
  'artifact.updated': record({
    ...jobId,
    artifact: record({
      id: { type: 'string' },
      name: { type: 'string' },
      kind: { type: 'string' },
      execution_id: nullableStr,
    }),
  }),
  'review.updated': record({ ...jobId, review_state: { type: 'string', enum: [...REVIEW_STATES] } }),
  expired: expiredEvent,
};
