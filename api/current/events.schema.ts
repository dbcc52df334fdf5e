/** JSON Schemas of GET /api/events, the organization's activity stream (commands/organizationEvents.ts). */
import { SERVICE_EVENT_TYPES } from '../../commands/serviceEvents';
import type { Schema } from '../../lib/ajv';
import { WEBHOOK_EVENT_DATA } from './webhookEvents.schema';

export const organizationEventsQuery = {
  type: 'object',
  additionalProperties: false,
  properties: {
    lastEventId: {
      type: 'string',
      maxLength: 100,
      description: 'Resume after this event (its `id:`); the `Last-Event-ID` header wins when both are sent',
    },
    types: {
      type: 'string',
      maxLength: 500,
      pattern: '^[a-z_.]+(,[a-z_.]+)*$',
      'x-message': 'Invalid types: comma-separated event type prefixes, e.g. job.,chat.',
      description: 'Comma-separated event type prefixes (`job.,chat.`) or whole types; absent: every type',
    },
  },
} as const;

export const organizationEventsResponse: Schema = {
  sse: true,
  description:
    'text/event-stream: the organization’s service events after Last-Event-ID (else only new ones), then live; each event’s `id:` is its cursor (`<createdAt ms>-<event id>`), its name the event type, its data the webhook body `{id, type, createdAt, organizationId, data}`; `: heartbeat` every SSE_HEARTBEAT_MS; never ends by itself',
};

/** Each event type's SSE data: the webhook body with that type's `data`. */
export const organizationStreamEvents: Record<string, Schema> = Object.fromEntries(
  SERVICE_EVENT_TYPES.map((type) => [
    type,
    {
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
  ])
);
