/** JSON Schemas of the current surface's /api/missions (the Mission record keeps the spec's camelCase names). */
import type { Schema } from '../../lib/ajv';
import { MISSION_STATUSES, SCHEDULE_TYPES } from '../../models/Mission';
import {
  nextCursor,
  nullableStr,
  nullableTimestamp,
  oneOfStrings,
  pageQuery,
  pathParams,
  record,
  requiredStr,
} from '../schemas';
import { MAX_MESSAGE_CHARS } from '../v1/executions.schema';
import { taskCreateBody, taskSchema, taskUpdateBody } from '../v1/tasks.schema';
import { jobSchema } from './jobs.schema';

const missionStatus = oneOfStrings(MISSION_STATUSES, 'status');

const schedule = {
  type: 'object',
  additionalProperties: false,
  required: ['type'],
  description:
    '`{type: "cron", value: "<5-field cron>", timezone: "<IANA>"}` (timezone default UTC), ' +
    '`{type: "once", value: "<ISO time>"}`, or `{type: "manual"}` (runs only when triggered; the default)',
  properties: {
    type: oneOfStrings(SCHEDULE_TYPES, 'schedule.type'),
    value: requiredStr(200, { description: 'The cron expression (cron) or the ISO 8601 time (once)' }),
    timezone: requiredStr(100, { description: 'IANA time zone of a cron schedule (default UTC)' }),
  },
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
  properties: { title: requiredStr(200), goal: requiredStr(MAX_MESSAGE_CHARS), schedule, status: missionStatus },
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
export const missionListResponse: Schema = record({
  missions: { type: 'array', items: missionSchema },
  next_cursor: nextCursor,
});

/** Mission tasks are v1 tasks (one task model, one state machine): the same bodies and record. */
const { spaceId: _spaceId, ...missionTaskFields } = taskCreateBody.properties;
export const missionTaskCreateBody = { ...taskCreateBody, properties: missionTaskFields } as const;
export const missionTaskUpdateBody = taskUpdateBody;
export const missionTaskResponse: Schema = record({ task: taskSchema });
export const startWorkResponse: Schema = record({ jobId: { type: 'string' }, job: jobSchema });

/** `{id, taskId}` path parameters. */
export const missionTaskParams = pathParams('id', 'taskId');
