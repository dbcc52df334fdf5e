/**
 * /api/messaging-integration: the organization's webhook destination, its signing secret (shown once: on the first
 * PUT and on each rotation), a signed test delivery, and the delivery log with redelivery (SPEC "Webhook
 * delivery"; commands/webhooks.ts; docs/decisions.md "Webhook delivery"). Schemas: webhooks.schema.ts.
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
import type { AppDeps } from '../deps';
import { input, type RouteSpec } from '../route';
import { record, requiredStr } from '../schemas';
import {
  deliverySchema,
  integrationBody,
  integrationSchema,
  rotateBody,
  secretSchema,
  testResultSchema,
} from './webhooks.schema';

const tags = ['Webhooks'];

/** Deliveries listed at most (newest first). */
export const MAX_DELIVERIES_LISTED = 100;

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
