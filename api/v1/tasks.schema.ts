/** JSON Schemas of /api/v1/tasks. */
import type { Schema } from '../../lib/ajv';
import { TASK_PRIORITIES, TASK_STATUSES } from '../../models/Task';
import { nextCursor, pageQuery, record, requiredStr, str, timestamp } from '../schemas';

export const STATUS_MESSAGE = 'Invalid status. Must be: pending, in_progress, completed, cancelled';
export const PRIORITY_MESSAGE = 'Invalid priority. Must be: low, medium, high, urgent';

const status = { type: 'string', enum: [...TASK_STATUSES], 'x-message': STATUS_MESSAGE } as const;
const priority = { type: 'string', enum: [...TASK_PRIORITIES], 'x-message': PRIORITY_MESSAGE } as const;
const assignTo = {
  type: ['string', 'null'],
  maxLength: 100,
  description: 'Agent id or user id; null unassigns',
} as const;

export const taskCreateBody = {
  type: 'object',
  additionalProperties: false,
  required: ['title'],
  properties: {
    title: requiredStr(500),
    description: str(20_000),
    priority: { ...priority, description: 'Default `medium`' },
    assignTo,
    spaceId: str(100),
  },
} as const;

export const taskUpdateBody = {
  type: 'object',
  additionalProperties: false,
  properties: { title: requiredStr(500), description: str(20_000), priority, assignTo, status },
} as const;

export const taskListQuery = pageQuery({
  status,
  priority,
  assignedTo: str(100),
  spaceId: str(100),
  missionId: str(100, { description: 'Only the tasks of this mission (current surface: /api/missions)' }),
  unassigned: {
    type: 'boolean',
    description: '`true`: only the tasks assigned to nobody (the ones a member can claim); not with assignedTo',
  },
});

export const taskSchema: Schema = record(
  {
    id: { type: 'string', pattern: '^task-\\d+-[a-z0-9]+$' },
    title: { type: 'string' },
    description: { type: 'string' },
    status: { type: 'string', enum: [...TASK_STATUSES] },
    priority: { type: 'string', enum: [...TASK_PRIORITIES] },
    assignedTo: { type: 'string' },
    assigneeType: { type: 'string', enum: ['agent', 'user'] },
    spaceId: { type: 'string' },
    missionId: { type: 'string', description: 'The mission the task belongs to (current surface: /api/missions)' },
    organizationId: { type: 'string' },
    createdBy: { type: 'string' },
    createdAt: timestamp,
    updatedAt: timestamp,
    completedAt: timestamp,
  },
  ['assignedTo', 'assigneeType', 'spaceId', 'missionId', 'completedAt']
);

export const taskResponse: Schema = record({ success: { type: 'boolean' }, task: taskSchema });
export const taskRunResponse: Schema = record({
  success: { type: 'boolean' },
  executionId: {
    type: 'string',
    description:
      'The run: an execution of the task’s agent recording the task (`taskId`); follow it with GET /api/v1/executions/{id}/stream',
  },
  task: taskSchema,
});
export const taskListResponse: Schema = record({
  success: { type: 'boolean' },
  tasks: { type: 'array', items: taskSchema },
  nextCursor,
});
