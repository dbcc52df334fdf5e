/**
 * The webhook deliveries the service sends (SPEC "Webhook delivery"): each event type's `data`, the body and the
 * headers, published as the OpenAPI document's top-level `webhooks` (one entry per type). The event table of docs/current-surface.md
 * says the same in words.
 */
import { SERVICE_EVENT_TYPES, type ServiceEventType } from '../../commands/serviceEvents';
import type { Schema } from '../../lib/ajv';
import { missionRunSkippedData } from './missions.schema';

const task: Schema = {
  type: 'object',
  properties: {
    id: { type: 'string' },
    title: { type: 'string' },
    status: { type: 'string' },
    priority: { type: 'string' },
    assignedTo: { type: ['string', 'null'] },
    spaceId: { type: ['string', 'null'] },
  },
  required: ['id', 'title', 'status', 'priority', 'assignedTo', 'spaceId'],
};
const usage: Schema = {
  type: 'object',
  properties: { input_tokens: { type: 'integer' }, output_tokens: { type: 'integer' } },
};
const execution = (status: string, extra: Record<string, Schema> = {}): Schema => ({
  type: 'object',
  properties: {
    executionId: { type: 'string' },
    agentId: { type: 'string' },
    chatId: { type: 'string' },
    status: { const: status },
    usage,
    ...extra,
  },
  required: ['executionId', 'status'],
});
/** A repository clone's event: the mount, and what the step adds. */
const repoClone = (extra: Record<string, Schema>): Schema => ({
  type: 'object',
  properties: {
    repoId: { type: 'string' },
    workspaceId: { type: 'string' },
    url: { type: 'string' },
    path: { type: 'string', description: 'The folder of the workspace; empty: the workspace root' },
    ...extra,
  },
  required: ['repoId', 'workspaceId', 'url', 'path', ...Object.keys(extra)],
});
const recordedByOwner: Schema = {
  type: 'object',
  description: 'Recorded by jobs and missions; its fields are documented with them',
};

/** `data` of each event type (and of the `test` delivery). */
export const WEBHOOK_EVENT_DATA: Record<ServiceEventType | 'test', Schema> = {
  'job.created': recordedByOwner,
  'job.status_changed': recordedByOwner,
  'job.review_requested': recordedByOwner,
  'job.review_overdue': recordedByOwner,
  'job.review_escalated': recordedByOwner,
  'job.done': recordedByOwner,
  'mission.run_started': recordedByOwner,
  'mission.run_skipped': missionRunSkippedData,
  'mission.updated': recordedByOwner,
  'execution.completed': execution('completed'),
  'execution.failed': execution('failed', {
    error: { type: 'object', properties: { message: { type: 'string' }, code: { type: 'string' } } },
  }),
  'chat.status_changed': {
    type: 'object',
    properties: {
      chatId: { type: 'string' },
      status: { type: 'string', enum: ['working', 'done', 'error', 'standby'] },
      executionId: { type: 'string' },
    },
    required: ['chatId', 'status'],
  },
  'task.created': { type: 'object', properties: { task }, required: ['task'] },
  'task.updated': { type: 'object', properties: { task }, required: ['task'] },
  'task.status_changed': {
    type: 'object',
    properties: { task, previousStatus: { type: 'string' } },
    required: ['task', 'previousStatus'],
  },
  'task.completed': { type: 'object', properties: { task }, required: ['task'] },
  'task.assigned': {
    type: 'object',
    properties: { task, previousAssignee: { type: ['string', 'null'] } },
    required: ['task', 'previousAssignee'],
  },
  'repo.clone_started': repoClone({ branch: { type: ['string', 'null'] } }),
  'repo.clone_completed': repoClone({ commit: { type: 'string' } }),
  'repo.clone_failed': repoClone({ error: { type: 'string' } }),
  'budget.threshold': {
    type: 'object',
    description: 'A budget reached 80 % of its limit (once per budget per period; docs/spend.md)',
    properties: {
      budgetId: { type: 'string' },
      scope: { type: 'string', enum: ['organization', 'agent', 'mission'] },
      targetId: { type: ['string', 'null'] },
      period: { type: 'string', enum: ['day', 'month', 'run'] },
      periodKey: { type: 'string', description: '`YYYY-MM-DD`, `YYYY-MM`, or `run:<executionId>`' },
      unit: { type: 'string', enum: ['tokens', 'usd'] },
      limit: { type: 'number' },
      spent: { type: 'number' },
      percent: { type: 'integer' },
      executionId: { type: 'string', description: 'The execution whose model call crossed it' },
    },
    required: ['budgetId', 'scope', 'period', 'periodKey', 'unit', 'limit', 'spent', 'percent'],
  },
  test: { type: 'object', properties: { message: { type: 'string' } } },
};

const header = (name: string, description: string): Record<string, unknown> => ({
  name,
  in: 'header',
  required: true,
  description,
  schema: { type: 'string' },
});

/** @returns the OpenAPI `webhooks` object: one POST per event type. */
export function webhookOperations(): Record<string, unknown> {
  const types = [...SERVICE_EVENT_TYPES, 'test' as const];
  return Object.fromEntries(
    types.map((type) => [
      type,
      {
        post: {
          summary: `${type} delivery`,
          description:
            'POSTed to the organization’s destination (`PUT /api/messaging-integration`). 2xx acknowledges; 408, 429, ' +
            '5xx and network errors are retried after 0 s, 1 s, 2 s and 4 s (`Retry-After` honoured up to 60 s); ' +
            'other statuses are final. Verify `Service-Signature` before trusting the body.',
          operationId: `webhook_${type.replace(/\./g, '_')}`,
          tags: ['Webhooks'],
          parameters: [
            header('Service-Event-Id', 'The event id `evt_…`; receivers dedupe on it'),
            header('Service-Event-Type', `\`${type}\``),
            header('Service-Delivery-Attempt', 'Attempt number, from 1'),
            header('Service-Timestamp', 'Unix seconds, new for each attempt'),
            header(
              'Service-Signature',
              '`t=<timestamp>,v1=<hex>`: HMAC-SHA256 of `<timestamp>.<rawBody>` keyed with the signing secret; one ' +
                '`v1=` per valid secret during a rotation’s grace period'
            ),
            header('Idempotency-Key', 'Same as Service-Event-Id'),
          ],
          requestBody: {
            required: true,
            content: {
              'application/json': {
                schema: {
                  type: 'object',
                  properties: {
                    id: { type: 'string' },
                    type: { const: type },
                    createdAt: { type: 'string', format: 'date-time' },
                    organizationId: { type: 'string' },
                    data: WEBHOOK_EVENT_DATA[type],
                  },
                  required: ['id', 'type', 'createdAt', 'organizationId', 'data'],
                },
              },
            },
          },
          responses: { '2XX': { description: 'Delivered' } },
        },
      },
    ])
  );
}
