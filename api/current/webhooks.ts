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
} from '../../commands/webhooks';
import type { AppDeps } from '../deps';
import { route, type RouteSpec } from '../route';
import {
  deliveryListQuery,
  deliveryListResponse,
  integrationBody,
  integrationCreatedResponse,
  integrationResponse,
  redeliverParams,
  redeliverResponse,
  rotateBody,
  testResponse,
} from './webhooks.schema';

const tags = ['Webhooks'];

/**
 * @param deps app dependencies.
 * @returns the route declarations.
 */
export function webhookRoutes(deps: AppDeps): RouteSpec[] {
  return [
    route({
      method: 'get',
      path: '/messaging-integration',
      summary:
        'Read the webhook delivery configuration (until the first PUT: no destination, delivery disabled, no secret)',
      tags,
      auth: 'service',
      scope: 'webhooks:read',
      responses: { 200: integrationResponse },
      handler: async (ctx) => {
        const doc = await findIntegration(ctx.state.auth);
        ctx.body = { integration: doc ? presentIntegration(doc) : presentUnconfiguredIntegration() };
      },
    }),
    route({
      method: 'put',
      path: '/messaging-integration',
      summary: 'Set the https destination and enable delivery (the first PUT creates and shows the signing secret)',
      tags,
      auth: 'service',
      scope: 'webhooks:write',
      body: integrationBody,
      responses: {
        200: integrationResponse,
        201: integrationCreatedResponse,
      },
      errors: [500],
      handler: async (ctx, { body }) => {
        const { integration, signingSecret, created } = await putIntegration(ctx.state.auth, body, deps.config);
        ctx.status = created ? 201 : 200;
        ctx.body = created
          ? { integration: presentIntegration(integration), signing_secret: signingSecret }
          : { integration: presentIntegration(integration) };
      },
    }),
    route({
      method: 'post',
      path: '/messaging-integration/signing-secret/rotate',
      summary: 'Rotate the HMAC-SHA256 signing secret (the new one is shown once)',
      tags,
      auth: 'service',
      scope: 'webhooks:write',
      body: rotateBody,
      responses: { 200: integrationCreatedResponse },
      handler: async (ctx, { body }) => {
        const { integration, signingSecret } = await rotateSigningSecret(
          ctx.state.auth,
          body.grace_period_seconds ?? 0,
          deps.config
        );
        ctx.body = { integration: presentIntegration(integration), signing_secret: signingSecret };
      },
    }),
    route({
      method: 'post',
      path: '/messaging-integration/test',
      summary: 'Send a signed `test` delivery now; the answer reports the receiver’s status and latency',
      tags,
      auth: 'service',
      scope: 'webhooks:write',
      responses: { 200: testResponse },
      handler: async (ctx) => {
        ctx.body = { result: await sendTestDelivery(ctx.state.auth, deps) };
      },
    }),
    route({
      method: 'get',
      path: '/messaging-integration/deliveries',
      summary: 'The delivery log: the latest deliveries, newest first, each with its attempts',
      tags,
      auth: 'service',
      scope: 'webhooks:read',
      query: deliveryListQuery,
      responses: { 200: deliveryListResponse },
      handler: async (ctx, { query }) => {
        const { limit } = query;
        const docs = await listDeliveries(ctx.state.auth, limit ?? 50);
        ctx.body = { deliveries: docs.map(presentDelivery) };
      },
    }),
    route({
      method: 'post',
      path: '/messaging-integration/deliveries/:eventId/redeliver',
      summary: 'Deliver an event again (a new run, attempts numbered from 1)',
      tags,
      auth: 'service',
      scope: 'webhooks:write',
      params: redeliverParams,
      responses: { 202: redeliverResponse },
      errors: [409],
      handler: async (ctx, { params }) => {
        const { eventId } = params;
        const run = await redeliver(ctx.state.auth, eventId, deps.temporal);
        ctx.status = 202;
        ctx.body = { event_id: eventId, run };
      },
    }),
  ];
}
