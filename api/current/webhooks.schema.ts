/** JSON Schemas of /api/messaging-integration (the webhook destination, its secrets, test deliveries, the delivery log). */
import { SERVICE_EVENT_TYPES } from '../../commands/serviceEvents';
import type { Schema } from '../../lib/ajv';
import { DELIVERY_STATUSES } from '../../models/WebhookDelivery';
import { WEBHOOK_POLICY } from '../../workflows/webhookPolicy';
import { httpUrl, nullableTimestamp, record, requiredStr, timestamp } from '../schemas';

const eventType = {
  type: 'string',
  enum: [...SERVICE_EVENT_TYPES],
  'x-message': `Invalid event type. Must be one of: ${SERVICE_EVENT_TYPES.join(', ')}`,
} as const;

export const integrationSchema: Schema = record({
  url: { type: ['string', 'null'], description: 'The destination; null until the first PUT' },
  enabled: { type: 'boolean', description: 'Whether events are delivered; false until the first PUT' },
  event_types: { type: ['array', 'null'], items: { type: 'string' } },
  signing_secrets: {
    type: 'array',
    description: 'Secrets that sign deliveries now (never in clear): the current one, and a rotated-out one in grace',
    items: record({ created_at: timestamp, expires_at: { type: ['string', 'null'], format: 'date-time' } }),
  },
  disabled: {
    type: ['object', 'null'],
    description:
      'Set when delivery disabled itself after every attempt failed for WEBHOOK_DISABLE_AFTER (a day): when, why and the recorded `webhook.disabled` event; the next PUT enables delivery again and clears it',
    required: ['at', 'reason', 'event_id'],
    properties: { at: timestamp, reason: { type: 'string' }, event_id: { type: ['string', 'null'] } },
  },
  created_at: { ...nullableTimestamp, description: 'null until the first PUT' },
  updated_at: { ...nullableTimestamp, description: 'null until the first PUT' },
});

export const secretSchema: Schema = {
  type: 'string',
  description: 'The signing secret in clear (`whsec_…`): shown only in this answer; the HMAC key is the whole string',
};

export const integrationBody = {
  type: 'object',
  additionalProperties: false,
  required: ['url'],
  properties: {
    url: { ...httpUrl(2000), description: 'The https destination (private addresses refused, §8)' },
    enabled: { type: 'boolean', description: 'Default true' },
    event_types: {
      type: ['array', 'null'],
      maxItems: SERVICE_EVENT_TYPES.length,
      items: eventType,
      description: 'Event types delivered; null or absent: all',
    },
  },
} as const;

export const rotateBody = {
  type: 'object',
  additionalProperties: false,
  properties: {
    grace_period_seconds: {
      type: 'integer',
      minimum: 0,
      maximum: WEBHOOK_POLICY.maxGraceSeconds,
      description: 'How long the previous secret still signs (one `v1=` per valid secret); default 0: it stops at once',
    },
  },
} as const;

export const testResultSchema: Schema = record({
  event_id: { type: 'string' },
  delivered: { type: 'boolean' },
  status: { type: ['integer', 'null'], description: 'The receiver’s HTTP status; null when none came' },
  latency_ms: { type: 'integer' },
  error: { type: ['string', 'null'] },
});

export const deliverySchema: Schema = record({
  event_id: { type: 'string' },
  event_type: { type: 'string' },
  status: { type: 'string', enum: [...DELIVERY_STATUSES] },
  run: { type: 'integer', description: '1, then one more per redelivery' },
  attempts: {
    type: 'array',
    description: 'Newest first',
    items: record({
      run: { type: 'integer' },
      attempt: { type: 'integer' },
      at: timestamp,
      status: { type: ['integer', 'null'] },
      latency_ms: { type: 'integer' },
      error: { type: ['string', 'null'] },
      response: {
        type: ['string', 'null'],
        description: `The first ${WEBHOOK_POLICY.logResponseBytes} bytes of the receiver’s answer, as text; null when none came`,
      },
    }),
  },
  next_attempt_at: {
    type: ['string', 'null'],
    format: 'date-time',
    description: 'While pending after a failed attempt: when the next attempt is due (the retry schedule); else null',
  },
  error: {
    type: ['string', 'null'],
    description: 'Why the delivery ended without a further attempt (destination disabled, backlog full); else null',
  },
  created_at: timestamp,
  updated_at: timestamp,
});

/** Deliveries listed at most (newest first). */
export const MAX_DELIVERIES_LISTED = 100;

export const integrationResponse = record({ integration: integrationSchema });
export const integrationCreatedResponse = record({ integration: integrationSchema, signing_secret: secretSchema });
export const testResponse = record({ result: testResultSchema });
export const deliveryListQuery = {
  type: 'object',
  additionalProperties: false,
  properties: {
    limit: { type: 'integer', minimum: 1, maximum: MAX_DELIVERIES_LISTED, description: 'Default 50' },
  },
} as const;
export const deliveryListResponse = record({ deliveries: { type: 'array', items: deliverySchema } });
export const redeliverParams = record({ eventId: requiredStr(100) });
export const redeliverResponse = record({ event_id: { type: 'string' }, run: { type: 'integer' } });
