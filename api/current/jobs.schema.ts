/** JSON Schemas of the current surface's /api/jobs (requests, responses, and the job stream's events). */
import type { Schema } from '../../lib/ajv';
import {
  ITERATION_REASONS,
  JOB_STATUSES,
  REVIEW_ACTION_EFFECTS,
  REVIEW_STATES,
  REVIEW_TIMEOUT_POLICIES,
} from '../../models/Job';
import { MAX_REVIEW_ACTIONS, MAX_REVIEW_TIMEOUT_SECONDS, REVIEW_ACTION_NAME } from '../../workflows/reviews';
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
import { jobRerunOf } from './jobReruns.schema';

/** Events replayed to a client that names no position (`Last-Event-ID`): the stream's last ones. */
export const JOB_REPLAY_EVENTS = 100;

const jobStatus = oneOfStrings(JOB_STATUSES, 'status');

/** A job's review declaration (issue 40, workflows/reviews.ts; checked further by commands/jobReviews.ts). */
export const reviewDeclaration = {
  type: 'object',
  additionalProperties: false,
  description:
    'What the job’s reviews wait for besides approve and iterate (declared actions, each with a JSON Schema for its payload), whom they wait for, and their deadline',
  properties: {
    actions: {
      type: 'array',
      maxItems: MAX_REVIEW_ACTIONS,
      description: 'Declared actions, taken with POST /api/jobs/{id}/decision',
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['name'],
        properties: {
          name: {
            type: 'string',
            pattern: REVIEW_ACTION_NAME,
            'x-message': 'Invalid review action name: lower-case letters, digits and _, at most 40',
          },
          schema: {
            type: 'object',
            description: 'JSON Schema (draft 2020-12 keywords, strict) of the payload; default: an empty object',
          },
          effect: {
            ...oneOfStrings(REVIEW_ACTION_EFFECTS, 'effect'),
            description: 'complete (default): the job completes; iterate: another iteration with the payload',
          },
          description: requiredStr(500),
        },
      },
    },
    assignee: requiredStr(100, { description: 'Whom the review waits for (a user id); default: the job’s creator' }),
    timeout: {
      oneOf: [
        { type: 'integer', minimum: 1, maximum: MAX_REVIEW_TIMEOUT_SECONDS },
        { type: 'string', maxLength: 40 },
      ],
      'x-message': 'Invalid review.timeout: whole seconds or an ISO 8601 duration (PT2S, PT1H, P1D)',
      description: 'How long each review may wait: whole seconds, or an ISO 8601 duration (days to seconds)',
    },
    on_timeout: {
      ...oneOfStrings(REVIEW_TIMEOUT_POLICIES, 'on_timeout'),
      description: 'What the deadline does (once per review); default remind',
    },
    escalate_to: requiredStr(100, { description: 'on_timeout escalate: the user the review is reassigned to' }),
  },
} as const;

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
    review: reviewDeclaration,
  },
} as const;

/** GET /api/jobs/inbox. */
export const inboxQuery = pageQuery({
  assignee: str(100, { description: 'Only reviews waiting for this user' }),
});

/** POST /api/jobs/{id}/decision: a declared action (or a built-in one) with its payload. */
export const decisionBody = {
  type: 'object',
  additionalProperties: false,
  required: ['action'],
  properties: {
    action: {
      type: 'string',
      pattern: REVIEW_ACTION_NAME,
      'x-message': 'Invalid action',
      description: 'A declared action of the job’s review, or approve, iterate, resume',
    },
    payload: { type: 'object', description: 'Validated against the action’s schema (400 with its error)' },
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
// Required by the review's schema, which the job's workflow checks (400 with the schema's error, issue 40).
export const iterateBody = actionBody(
  'feedback',
  'The reviewer’s feedback: the next iteration’s input (required)',
  false
);
export const resumeBody = actionBody(
  'input',
  'The input the agent asked for: the next iteration’s input (required)',
  false
);
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
const reviewAction: Schema = record(
  {
    name: { type: 'string' },
    schema: { type: 'object' },
    effect: { type: 'string', enum: [...REVIEW_ACTION_EFFECTS] },
    description: { type: 'string' },
  },
  ['effect', 'description']
);
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
    actions: {
      type: 'array',
      items: reviewAction,
      description: 'While awaiting_review or blocked: the actions the job takes, each with its payload’s JSON Schema',
    },
    assignee: { ...nullableStr, description: 'While awaiting_review (or blocked with a deadline): whom it waits for' },
    deadline: { ...iso, description: 'While awaiting_review (or blocked with a deadline): when its timeout passes' },
    on_timeout: {
      oneOf: [{ type: 'null' }, { type: 'string', enum: [...REVIEW_TIMEOUT_POLICIES] }],
      description: 'While awaiting_review (or blocked with a deadline): what the deadline does',
    },
    overdue_at: { ...iso, description: 'When the deadline passed (remind, escalate)' },
    escalated_from: { ...nullableStr, description: 'The assignee before an escalation' },
    decision: {
      oneOf: [
        { type: 'null' },
        record({ action: { type: 'string' }, payload: { type: 'object' }, by: nullableStr, at: iso }),
      ],
      description: 'The last decision: action (auto_approve, auto_reject: the deadline), payload, who (a user id)',
    },
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
  rerun_of: jobRerunOf,
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
  rerun_of: jobRerunOf,
  reruns: { type: 'array', items: jobRef, description: 'The job’s reruns (POST /api/jobs/{id}/rerun), newest first' },
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
  'review.updated': record(
    {
      ...jobId,
      review_state: { type: 'string', enum: [...REVIEW_STATES] },
      actions: { type: 'array', items: reviewAction },
      assignee: nullableStr,
      deadline: iso,
      on_timeout: { oneOf: [{ type: 'null' }, { type: 'string', enum: [...REVIEW_TIMEOUT_POLICIES] }] },
      decision: record({ action: { type: 'string' }, payload: { type: 'object' }, by: nullableStr }),
    },
    ['actions', 'assignee', 'deadline', 'on_timeout', 'decision']
  ),
  'review.overdue': record({
    ...jobId,
    policy: { type: 'string', enum: ['remind', 'escalate'] },
    deadline: iso,
    overdue_at: iso,
    assignee: nullableStr,
    escalated_from: nullableStr,
  }),
  expired: expiredEvent,
};
