/**
 * Activities of webhook delivery (workflows/webhookDelivery.ts, workflows/webhookTest.ts). One activity call sends
 * one attempt and records it in the delivery log under its (run, attempt) number, so a retried activity (the worker
 * died during it) rewrites the same log entry instead of adding one; the receiver may then see the same attempt
 * number twice, which its dedupe on Idempotency-Key (= the event id) absorbs.
 */
import { webhookAttempts, webhookLag } from '../lib/metrics';
import { ApplicationFailure } from '@temporalio/common';
import { signingSecrets, type DeliveryInput, type TestResult } from '../commands/webhooks';
import { serviceEventBody } from '../commands/serviceEvents';
import type { Config } from '../lib/config';
import { retentionExpiry } from '../lib/expiry';
import type { Logger } from '../lib/logger';
import { sendWebhook, type SendResult } from '../lib/webhookSender';
import { signatureHeader } from '../lib/webhookSignature';
import {
  ServiceEvent,
  WebhookDelivery,
  WebhookIntegration,
  type DeliveryStatus,
  type ServiceEventDoc,
  type WebhookDeliveryDoc,
  type WebhookIntegrationDoc,
} from '../models';
import { WEBHOOK_POLICY } from '../workflows/webhookPolicy';

export interface WebhookActivityDeps {
  logger: Logger;
  config: Readonly<Config>;
}

export interface AttemptInput extends DeliveryInput {
  attempt: number;
  /** The run's last attempt: a transient failure marks the delivery failed. */
  last: boolean;
}

export interface AttemptResult {
  outcome: SendResult['outcome'];
  retryAfterSeconds: number | null;
}

/**
 * @param deps logger and configuration.
 * @returns the webhook activities.
 */
export function createWebhookActivities(deps: WebhookActivityDeps) {
  const log = deps.logger.child({ component: 'webhooks' });

  /**
   * Signs and sends one body to the organization's destination.
   * @param integration the destination.
   * @param eventId the event id (Service-Event-Id, Idempotency-Key).
   * @param type the event type.
   * @param body the raw JSON body.
   * @param attempt the attempt number.
   * @returns the outcome.
   */
  async function send(
    integration: WebhookIntegrationDoc,
    eventId: string,
    type: string,
    body: string,
    attempt: number
  ): Promise<SendResult> {
    if (!deps.config.encryptionKey) throw ApplicationFailure.nonRetryable('ENCRYPTION_KEY is not configured');
    const timestamp = Math.floor(Date.now() / 1000);
    return sendWebhook({
      url: integration.url,
      body,
      headers: {
        'Service-Event-Id': eventId,
        'Service-Event-Type': type,
        'Service-Delivery-Attempt': String(attempt),
        'Service-Timestamp': String(timestamp),
        'Service-Signature': signatureHeader(signingSecrets(integration, deps.config.encryptionKey), timestamp, body),
        'Idempotency-Key': eventId,
      },
      allowPrivate: deps.config.webhookAllowPrivate,
      timeoutMs: deps.config.webhookTimeoutMs,
      maxResponseBytes: WEBHOOK_POLICY.maxResponseBytes,
      excerptBytes: WEBHOOK_POLICY.logResponseBytes,
    });
  }

  async function record(
    input: AttemptInput,
    type: string,
    at: Date,
    result: Pick<SendResult, 'status' | 'latencyMs' | 'error' | 'response'>,
    status: DeliveryStatus
  ): Promise<void> {
    const entry = {
      run: input.run,
      attempt: input.attempt,
      at,
      status: result.status,
      latencyMs: result.latencyMs,
      error: result.error,
      response: result.response,
    };
    if (input.run === 1 && input.attempt === 1) {
      // The first write of the log entry (or its rewrite by a retried first attempt): one upsert, measured cheaper
      // than mongoose's create of a document with a sub-document array (docs/benchmarks.md).
      await WebhookDelivery.updateOne(
        { _id: input.eventId },
        {
          $setOnInsert: { organizationId: input.organizationId, type },
          $set: { attempts: [entry], status, run: input.run, ...retentionExpiry('deliveryLogMs', at) },
        },
        { upsert: true }
      );
      return;
    }
    await WebhookDelivery.updateOne(
      { _id: input.eventId },
      {
        $setOnInsert: {
          organizationId: input.organizationId,
          type,
          run: input.run,
          status: 'pending',
          attempts: [],
          ...retentionExpiry('deliveryLogMs', at),
        },
      },
      { upsert: true }
    );
    const doc = await WebhookDelivery.findById(input.eventId).lean<WebhookDeliveryDoc>();
    const others = (doc?.attempts ?? []).filter((a) => !(a.run === input.run && a.attempt === input.attempt));
    const attempts = [...others, entry]
      .sort((a, b) => a.run - b.run || a.attempt - b.attempt)
      .slice(-WEBHOOK_POLICY.logAttemptsPerEvent);
    await WebhookDelivery.updateOne(
      { _id: input.eventId },
      { $set: { attempts, status, run: input.run, ...retentionExpiry('deliveryLogMs', at) } }
    );
  }

  /**
   * @param input the run's input.
   * @returns the event's type and body: from the input, or (a run started before they were passed) the database.
   */
  async function eventOf(input: AttemptInput): Promise<{ type: string; body: string }> {
    if (input.type !== undefined && input.body !== undefined) return { type: input.type, body: input.body };
    const event = await ServiceEvent.findById(input.eventId).lean<ServiceEventDoc>();
    if (!event) throw ApplicationFailure.nonRetryable(`Event ${input.eventId} not found`, 'EventMissing');
    return { type: event.type, body: JSON.stringify(serviceEventBody(event)) };
  }

  /**
   * One attempt of one event's delivery.
   * @param input event, organization, run, attempt number, whether it is the last.
   * @returns the outcome and the receiver's Retry-After.
   */
  async function webhookAttempt(input: AttemptInput): Promise<AttemptResult> {
    const [event, integration] = await Promise.all([
      eventOf(input),
      WebhookIntegration.findById(input.organizationId).lean<WebhookIntegrationDoc>(),
    ]);
    const at = new Date();
    if (!integration?.enabled) {
      await record(
        input,
        event.type,
        at,
        { status: null, latencyMs: 0, error: 'Webhook delivery is disabled', response: null },
        'failed'
      );
      webhookAttempts.inc({ outcome: 'disabled' });
      return { outcome: 'permanent', retryAfterSeconds: null };
    }
    const result = await send(integration, input.eventId, event.type, event.body, input.attempt);
    webhookAttempts.inc({ outcome: result.outcome });
    if (result.outcome === 'delivered') {
      const created = Date.parse((JSON.parse(event.body) as { createdAt?: string }).createdAt ?? '');
      if (Number.isFinite(created)) webhookLag.observe(Math.max(0, Date.now() - created) / 1000);
    }
    const status: DeliveryStatus =
      result.outcome === 'delivered'
        ? 'delivered'
        : result.outcome === 'permanent' || input.last
          ? 'failed'
          : 'pending';
    await record(input, event.type, at, result, status);
    if (result.outcome !== 'delivered')
      log.info(
        { eventId: input.eventId, run: input.run, attempt: input.attempt, status: result.status, error: result.error },
        'webhook attempt failed'
      );
    return { outcome: result.outcome, retryAfterSeconds: result.retryAfterSeconds };
  }

  /**
   * A signed `test` delivery, sent once.
   * @param input the test event id and the organization.
   * @returns the receiver's status and latency.
   */
  async function webhookSendTest(input: { eventId: string; organizationId: string }): Promise<TestResult> {
    const integration = await WebhookIntegration.findById(input.organizationId).lean<WebhookIntegrationDoc>();
    if (!integration)
      return { event_id: input.eventId, delivered: false, status: null, latency_ms: 0, error: 'Not configured' };
    const body = JSON.stringify({
      id: input.eventId,
      type: 'test',
      createdAt: new Date().toISOString(),
      organizationId: input.organizationId,
      data: { message: 'A test delivery from the Agent Automation Service' },
    });
    const result = await send(integration, input.eventId, 'test', body, 1);
    return {
      event_id: input.eventId,
      delivered: result.outcome === 'delivered',
      status: result.status,
      latency_ms: result.latencyMs,
      error: result.error,
    };
  }

  return { webhookAttempt, webhookSendTest };
}

export type WebhookActivities = ReturnType<typeof createWebhookActivities>;
