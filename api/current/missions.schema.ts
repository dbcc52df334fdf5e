/** JSON Schemas of the current surface's /api/missions (the Mission record keeps the spec's camelCase names). */
import type { Schema } from '../../lib/ajv';
import { MISSION_STATUSES, OVERLAP_POLICIES, SCHEDULE_TYPES, SKIP_REASONS } from '../../models/Mission';
import {
  nextCursor,
  nullableStr,
  nullableTimestamp,
  oneOfStrings,
  pageQuery,
  pathParams,
  record,
  requiredStr,
  str,
} from '../schemas';
import { MAX_MESSAGE_CHARS } from '../v1/executions.schema';
import { taskCreateBody, taskSchema, taskUpdateBody } from '../v1/tasks.schema';
import { concurrencyLimitSchema } from './chats.schema';
import { jobSchema } from './jobs.schema';

const missionStatus = oneOfStrings(MISSION_STATUSES, 'status');

const DURATION = 'a whole number and a unit: `30s`, `10m`, `2h`, `1d`';
/** A duration a client may also clear (null). */
const nullableDuration = <const D extends string>(description: D) =>
  ({ type: ['string', 'null'], minLength: 2, maxLength: 10, description }) as const;

/** The schedule's policies, on Temporal Schedules' own features (docs/schedules.md). */
const schedulePolicies = {
  overlap: oneOfStrings(OVERLAP_POLICIES, 'schedule.overlap', {
    description:
      'What a run due while an earlier run of the mission is still going does (Temporal overlap policy): `skip` ' +
      '(recorded as `mission.run_skipped`), `buffer_one`, `buffer_all`, `cancel_other`, `terminate_other`, ' +
      '`allow_all` (the default: every run starts)',
  }),
  catchupWindow: nullableDuration(
    `How late a run missed while the engine was down may still start (${DURATION}; at least 10s); older ones are ` +
      'skipped and recorded as `mission.run_skipped` (`missed_catchup_window`). null: one year (Temporal’s default)'
  ),
  pauseOnFailure: { type: 'boolean', description: 'A failed run pauses the mission (default false)' } as const,
  jitter: nullableDuration(`Each run starts up to this much later, at random (${DURATION}; at most 1d); null: none`),
} as const;

const scheduleDescription =
  '`{type: "cron", value: "<5-field cron>", timezone: "<IANA>"}` (timezone default UTC), `{type: "interval", ' +
  'value: "<duration>"}` (`30s`, `10m`, `2h`, `1d`), `{type: "once", value: "<ISO time>"}`, or `{type: "manual"}` ' +
  '(runs only when triggered; the default), with the policies `overlap`, `catchupWindow`, `pauseOnFailure` and `jitter`';

const scheduleProperties = {
  type: oneOfStrings(SCHEDULE_TYPES, 'schedule.type'),
  value: requiredStr(200, {
    description: 'The cron expression (cron), the duration between runs (interval) or the ISO 8601 time (once)',
  }),
  timezone: requiredStr(100, { description: 'IANA time zone of a cron schedule (default UTC)' }),
  ...schedulePolicies,
} as const;

const schedule = {
  type: 'object',
  additionalProperties: false,
  required: ['type'],
  description: scheduleDescription,
  properties: scheduleProperties,
} as const;

/** On update `type` may be left out: the times stay, the fields given change (a policy omitted keeps its value). */
const scheduleUpdate = {
  type: 'object',
  additionalProperties: false,
  description: `${scheduleDescription}. Without \`type\`, the times stay and only the fields given change`,
  properties: scheduleProperties,
} as const;

export const missionCreateBody = {
  type: 'object',
  additionalProperties: false,
  required: ['title', 'goal', 'agentType'],
  properties: {
    title: requiredStr(200),
    goal: requiredStr(MAX_MESSAGE_CHARS, { description: 'What each run’s job works toward' }),
    agentType: requiredStr(100, {
      description:
        'An agent id of the organization, or the slug of a library agent (a kind of agent: `general`, ' +
        '`research-assistant`, `writing-editor`, `code-reviewer`), installed in the organization on first use',
    }),
    schedule,
    status: { ...missionStatus, description: 'Default `active`; `paused` creates its Schedule paused' },
    workspaceId: requiredStr(100, {
      description: 'Where its jobs run; default: the caller’s active workspace, else the default one',
    }),
  },
} as const;

export const missionUpdateBody = {
  type: 'object',
  additionalProperties: false,
  properties: {
    title: requiredStr(200),
    goal: requiredStr(MAX_MESSAGE_CHARS),
    schedule: scheduleUpdate,
    status: missionStatus,
  },
} as const;

/** POST /api/missions/{id}/backfill. */
export const missionBackfillBody = {
  type: 'object',
  additionalProperties: false,
  required: ['start', 'end'],
  properties: {
    start: requiredStr(40, { format: 'date-time', description: 'Start of the past range (inclusive)' }),
    end: requiredStr(40, { format: 'date-time', description: 'End of the past range (inclusive), not in the future' }),
    overlap: oneOfStrings(OVERLAP_POLICIES, 'overlap', {
      description: 'The overlap policy of these runs (default: the schedule’s)',
    }),
  },
} as const;

export const missionListQuery = pageQuery({ status: missionStatus });

export const missionSchema: Schema = record({
  id: { type: 'string' },
  organizationId: { type: 'string' },
  userId: { type: 'string' },
  title: { type: 'string' },
  goal: { type: 'string' },
  agentType: { type: 'string' },
  agentId: { type: 'string' },
  workspaceId: { type: 'string' },
  schedule: record({
    type: { type: 'string', enum: [...SCHEDULE_TYPES] },
    value: nullableStr,
    timezone: { type: 'string' },
    overlap: { type: 'string', enum: [...OVERLAP_POLICIES] },
    catchupWindow: nullableStr,
    pauseOnFailure: { type: 'boolean' },
    jitter: nullableStr,
  }),
  status: { type: 'string', enum: [...MISSION_STATUSES] },
  lastRunAt: nullableTimestamp,
  nextRunTimes: {
    oneOf: [{ type: 'null' }, { type: 'array', items: { type: 'string', format: 'date-time' } }],
    description: 'The next run times from the mission’s Temporal Schedule (null in lists)',
  },
  createdAt: nullableTimestamp,
  updatedAt: nullableTimestamp,
});

export const missionResponse: Schema = record({ mission: missionSchema });

export const missionBackfillResponse: Schema = record({
  missionId: { type: 'string' },
  start: { type: 'string', format: 'date-time' },
  end: { type: 'string', format: 'date-time' },
  overlap: { type: 'string', enum: [...OVERLAP_POLICIES] },
  runs: { type: 'integer', description: 'How many runs the range holds (each one starts, by the overlap policy)' },
});

/** `data` of the webhook `mission.run_skipped`. */
export const missionRunSkippedData: Schema = record({
  mission_id: { type: 'string' },
  reason: { type: 'string', enum: [...SKIP_REASONS] },
  count: {
    type: 'integer',
    description: 'Which skip of this reason it is on the mission’s Schedule (1, 2, …): each one is recorded once',
  },
});
export const missionListResponse: Schema = record({
  missions: { type: 'array', items: missionSchema },
  next_cursor: nextCursor,
});

/** Mission tasks are v1 tasks (one task model, one state machine): the same bodies and record. */
const { spaceId: _spaceId, ...missionTaskFields } = taskCreateBody.properties;
export const missionTaskCreateBody = { ...taskCreateBody, properties: missionTaskFields } as const;
export const missionTaskUpdateBody = taskUpdateBody;
export const missionTaskResponse: Schema = record({ task: taskSchema });
/** Start-work's optional body: a concurrency key its job's iterations hold (docs/fairness.md "Concurrency keys"). */
export const startWorkBody = {
  type: 'object',
  additionalProperties: false,
  properties: {
    concurrency_key: str(200, {
      description:
        'Each iteration of the job holds this key (per organization) before it runs, counted with the executions carrying it: at most concurrency_limit at once, the others wait in order (status `queued`)',
    }),
    concurrency_limit: concurrencyLimitSchema,
  },
} as const;

export const startWorkResponse: Schema = record({ jobId: { type: 'string' }, job: jobSchema });

/** `{id, taskId}` path parameters. */
export const missionTaskParams = pathParams('id', 'taskId');
