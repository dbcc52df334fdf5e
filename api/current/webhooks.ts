/**
 * /api/messaging-integration: the organization's webhook destination, its signing secret (shown once: on the first
 * PUT and on each rotation), a signed test delivery, and the delivery log with redelivery (SPEC "Webhook
 * delivery"; commands/webhooks.ts; docs/decisions.md "Webhook delivery").
 */
import {
  findIntegration,
  listDeliveries,
  presentDelivery,
  presentIntegration,
  presentUnconfiguredIntegration,
  putIntegration,
  redeliver,
  rotateSigningSecret,
  sendTestDelivery,
  type IntegrationInput,
} from '../../commands/webhooks';
import { SERVICE_EVENT_TYPES } from '../../commands/serviceEvents';
import type { Schema } from '../../lib/ajv';
import { DELIVERY_STATUSES } from '../../models/WebhookDelivery';
import { WEBHOOK_POLICY } from '../../workflows/webhookPolicy';
import type { AppDeps } from '../deps';
import { input, type RouteSpec } from '../route';
import { httpUrl, nullableTimestamp, record, requiredStr, timestamp } from '../schemas';

const tags = ['Webhooks'];

/** Deliveries listed at most (newest first). */
export const MAX_DELIVERIES_LISTED = 100;

const eventType: Schema = {
  type: 'string',
  enum: [...SERVICE_EVENT_TYPES],
  'x-message': `Invalid event type. Must be one of: ${SERVICE_EVENT_TYPES.join(', ')}`,
};

const integrationSchema: Schema = record({
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

const secretSchema: Schema = {
  type: 'string',
  description: 'The signing secret in clear (`whsec_…`): shown only in this answer; the HMAC key is the whole string',
};

const integrationBody: Schema = {
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
};

const rotateBody: Schema = {
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
};

const testResultSchema: Schema = record({
  event_id: { type: 'string' },
  delivered: { type: 'boolean' },
  status: { type: ['integer', 'null'], description: 'The receiver’s HTTP status; null when none came' },
  latency_ms: { type: 'integer' },
  error: { type: ['string', 'null'] },
});

const deliverySchema: Schema = record({
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

/**
 * @param deps app dependencies.
 * @returns the route declarations.
 */
export function webhookRoutes(deps: AppDeps): RouteSpec[] {
  return [
    {
      method: 'get',
      path: '/messaging-integration',
      summary:
        'Read the webhook delivery configuration (until the first PUT: no destination, delivery disabled, no secret)',
      tags,
      auth: 'service',
      scope: 'webhooks:read',
      responses: { 200: record({ integration: integrationSchema }) },
      handler: async (ctx) => {
        const doc = await findIntegration(ctx.state.auth);
        ctx.body = { integration: doc ? presentIntegration(doc) : presentUnconfiguredIntegration() };
      },
    },
    {
      method: 'put',
      path: '/messaging-integration',
      summary: 'Set the https destination and enable delivery (the first PUT creates and shows the signing secret)',
      tags,
      auth: 'service',
      scope: 'webhooks:write',
      body: integrationBody,
      responses: {
        200: record({ integration: integrationSchema }),
        201: record({ integration: integrationSchema, signing_secret: secretSchema }),
      },
      errors: [500],
      handler: async (ctx) => {
        const { integration, signingSecret, created } = await putIntegration(
          ctx.state.auth,
          input<IntegrationInput>(ctx).body,
          deps.config
        );
        ctx.status = created ? 201 : 200;
        ctx.body = created
          ? { integration: presentIntegration(integration), signing_secret: signingSecret }
          : { integration: presentIntegration(integration) };
      },
    },
    {
      method: 'post',
      path: '/messaging-integration/signing-secret/rotate',
      summary: 'Rotate the HMAC-SHA256 signing secret (the new one is shown once)',
      tags,
      auth: 'service',
      scope: 'webhooks:write',
      body: rotateBody,
      responses: { 200: record({ integration: integrationSchema, signing_secret: secretSchema }) },
      handler: async (ctx) => {
        const body = input<{ grace_period_seconds?: number }>(ctx).body;
        const { integration, signingSecret } = await rotateSigningSecret(
          ctx.state.auth,
          body.grace_period_seconds ?? 0,
          deps.config
        );
        ctx.body = { integration: presentIntegration(integration), signing_secret: signingSecret };
      },
    },
    {
      method: 'post',
      path: '/messaging-integration/test',
      summary: 'Send a signed `test` delivery now; the answer reports the receiver’s status and latency',
      tags,
      auth: 'service',
      scope: 'webhooks:write',
      responses: { 200: record({ result: testResultSchema }) },
      handler: async (ctx) => {
        ctx.body = { result: await sendTestDelivery(ctx.state.auth, deps) };
      },
    },
    {
      method: 'get',
      path: '/messaging-integration/deliveries',
      summary: 'The delivery log: the latest deliveries, newest first, each with its attempts',
      tags,
      auth: 'service',
      scope: 'webhooks:read',
      query: {
        type: 'object',
        additionalProperties: false,
        properties: {
          limit: { type: 'integer', minimum: 1, maximum: MAX_DELIVERIES_LISTED, description: 'Default 50' },
        },
      },
      responses: { 200: record({ deliveries: { type: 'array', items: deliverySchema } }) },
      handler: async (ctx) => {
        const { limit } = input<unknown, { limit?: number }>(ctx).query;
        const docs = await listDeliveries(ctx.state.auth, limit ?? 50);
        ctx.body = { deliveries: docs.map(presentDelivery) };
      },
    },
    {
      method: 'post',
      path: '/messaging-integration/deliveries/:eventId/redeliver',
      summary: 'Deliver an event again (a new run, attempts numbered from 1)',
      tags,
      auth: 'service',
      scope: 'webhooks:write',
      params: record({ eventId: requiredStr(100) }),
      responses: { 202: record({ event_id: { type: 'string' }, run: { type: 'integer' } }) },
      errors: [409],
      handler: async (ctx) => {
        const { eventId } = input<unknown, unknown, { eventId: string }>(ctx).params;
        const run = await redeliver(ctx.state.auth, eventId, deps.temporal);
        ctx.status = 202;
        ctx.body = { event_id: eventId, run };
      },
    },
  ];
}
