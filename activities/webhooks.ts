/**
 * Activities of webhook delivery (workflows/webhookDestination.ts, the older per-event workflows/webhookDelivery.ts,
 * workflows/webhookTest.ts). Each attempt is recorded in the delivery log under its (run, attempt) number, so a
 * retried activity (the worker died during it) rewrites the same log entry instead of adding one; the receiver may
 * then see the same attempt number twice, which its dedupe on Idempotency-Key (= the event id) absorbs.
 */
import { webhookAttempts as attemptsMetric, webhookLag } from '../lib/metrics';
import { ApplicationFailure } from '@temporalio/common';
import { Context } from '@temporalio/activity';
import { eventIdFor, integrationChanged, serviceEventBody } from '../commands/serviceEvents';
import type { Config } from '../lib/config';
import { decryptSecret } from '../lib/crypto';
import { retentionExpiry } from '../lib/expiry';
import type { Logger } from '../lib/logger';
import { insertDocument, isDuplicateKey } from '../lib/mongo';
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
import type { DeliveryInput, TestResult } from '../workflows/definitions';
import { nextAttemptInMs, retryScheduleMs, WEBHOOK_POLICY } from '../workflows/webhookPolicy';

export interface WebhookActivityDeps {
  logger: Logger;
  config: Readonly<Config>;
}

/**
 * @param integration a stored integration.
 * @param key the AES key.
 * @param now the time.
 * @returns the secrets that sign now, current first.
 */
function signingSecrets(integration: WebhookIntegrationDoc, key: Buffer, now = new Date()): string[] {
  return integration.secrets
    .filter((s) => s.expiresAt === null || s.expiresAt === undefined || s.expiresAt.getTime() > now.getTime())
    .sort((a, b) => (a.expiresAt ? 1 : 0) - (b.expiresAt ? 1 : 0))
    .map((s) => decryptSecret(key, s.sealed));
}

/** One attempt of the per-event workflow (workflows/webhookDelivery.ts, kept for runs started before the upgrade). */
export interface AttemptInput extends DeliveryInput {
  attempt: number;
  /** The run's last attempt: a transient failure marks the delivery failed. */
  last: boolean;
}

export interface AttemptResult {
  outcome: SendResult['outcome'];
  retryAfterSeconds: number | null;
}

/** One attempt in a destination's batch. */
export interface BatchItem {
  eventId: string;
  run: number;
  attempt: number;
  type?: string;
  /** The exact body; absent (carried across continue-as-new without it): the attempt reads the stored event. */
  body?: string;
}

export interface BatchInput {
  organizationId: string;
  items: BatchItem[];
}

/** What became of one attempt: delivered, retried after `retryInMs`, or failed for good. */
export interface ItemResult {
  outcome: 'delivered' | 'retry' | 'failed';
  retryInMs: number | null;
}

export interface BatchResult {
  results: ItemResult[];
  /** WEBHOOK_DISABLE_AFTER, for the workflow's decision (it reads no configuration itself). */
  disableAfterMs: number;
  /** When the destination last changed (ms): a failing streak counts from it at the earliest. */
  changedAt: number;
}

/** Where one attempt is recorded. */
interface LogKey {
  eventId: string;
  organizationId: string;
  run: number;
  attempt: number;
}

/** Extra fields of the log entry written with an attempt. */
interface LogState {
  status: DeliveryStatus;
  nextAttemptAt: Date | null;
  error: string | null;
}

/** Heartbeats of a running batch start after this (a quick batch sends none). */
const BATCH_HEARTBEAT_MS = 2_000;

/**
 * Delivery lag (event recorded → delivered) into its histogram.
 * @param body the event's stored body (its createdAt).
 */
function observeLag(body: string): void {
  const created = Date.parse((JSON.parse(body) as { createdAt?: string }).createdAt ?? '');
  if (Number.isFinite(created)) webhookLag.observe(Math.max(0, Date.now() - created) / 1000);
}

/**
 * @param deps logger and configuration.
 * @returns the webhook activities.
 */
export function createWebhookActivities(deps: WebhookActivityDeps) {
  const log = deps.logger.child({ component: 'webhooks' });
  const schedule = retryScheduleMs(deps.config.webhookRetry.tailMs, deps.config.webhookRetry.forMs);

  function secretsOf(integration: WebhookIntegrationDoc): string[] {
    if (!deps.config.encryptionKey) throw ApplicationFailure.nonRetryable('ENCRYPTION_KEY is not configured');
    return signingSecrets(integration, deps.config.encryptionKey);
  }

  /**
   * Signs and sends one body to the organization's destination.
   * @param integration the destination.
   * @param secrets the secrets that sign now (signingSecrets).
   * @param eventId the event id (Service-Event-Id, Idempotency-Key).
   * @param type the event type.
   * @param body the raw JSON body.
   * @param attempt the attempt number.
   * @returns the outcome.
   */
  async function send(
    integration: WebhookIntegrationDoc,
    secrets: string[],
    eventId: string,
    type: string,
    body: string,
    attempt: number
  ): Promise<SendResult> {
    const timestamp = Math.floor(Date.now() / 1000);
    const result = await sendWebhook({
      url: integration.url,
      body,
      headers: {
        'Service-Event-Id': eventId,
        'Service-Event-Type': type,
        'Service-Delivery-Attempt': String(attempt),
        'Service-Timestamp': String(timestamp),
        'Service-Signature': signatureHeader(secrets, timestamp, body),
        'Idempotency-Key': eventId,
      },
      allowPrivate: deps.config.webhookAllowPrivate,
      timeoutMs: deps.config.webhookTimeoutMs,
      maxResponseBytes: WEBHOOK_POLICY.maxResponseBytes,
      excerptBytes: WEBHOOK_POLICY.logResponseBytes,
    });
    if (result.detail) log.warn({ integration: integration._id, eventId, detail: result.detail }, result.error ?? '');
    return result;
  }

  async function record(
    key: LogKey,
    type: string,
    at: Date,
    result: Pick<SendResult, 'status' | 'latencyMs' | 'error' | 'response'>,
    state: LogState
  ): Promise<void> {
    const entry = {
      run: key.run,
      attempt: key.attempt,
      at,
      status: result.status,
      latencyMs: result.latencyMs,
      error: result.error,
      response: result.response,
    };
    const fields = { ...state, run: key.run, ...retentionExpiry('deliveryLogMs', at) };
    if (key.run === 1 && key.attempt === 1) {
      // The first write of the log entry (or its rewrite by a retried first attempt): one upsert, measured cheaper
      // than mongoose's create of a document with a sub-document array (docs/benchmarks.md).
      await WebhookDelivery.updateOne(
        { _id: key.eventId },
        { $setOnInsert: { organizationId: key.organizationId, type }, $set: { attempts: [entry], ...fields } },
        { upsert: true }
      );
      return;
    }
    await WebhookDelivery.updateOne(
      { _id: key.eventId },
      {
        $setOnInsert: {
          organizationId: key.organizationId,
          type,
          run: key.run,
          status: 'pending',
          attempts: [],
          ...retentionExpiry('deliveryLogMs', at),
        },
      },
      { upsert: true }
    );
    const doc = await WebhookDelivery.findById(key.eventId).lean<WebhookDeliveryDoc>();
    const others = (doc?.attempts ?? []).filter((a) => !(a.run === key.run && a.attempt === key.attempt));
    const attempts = [...others, entry]
      .sort((a, b) => a.run - b.run || a.attempt - b.attempt)
      .slice(-WEBHOOK_POLICY.logAttemptsPerEvent);
    await WebhookDelivery.updateOne({ _id: key.eventId }, { $set: { attempts, ...fields } });
  }

  /**
   * @param input an event id, and its type and body when the caller has them.
   * @returns the event's type and body: from the input, or the stored event; null when the event is gone.
   */
  async function eventOf(input: {
    eventId: string;
    type?: string;
    body?: string;
  }): Promise<{ type: string; body: string } | null> {
    if (input.type !== undefined && input.body !== undefined) return { type: input.type, body: input.body };
    const event = await ServiceEvent.findById(input.eventId).lean<ServiceEventDoc>();
    return event ? { type: event.type, body: JSON.stringify(serviceEventBody(event)) } : null;
  }

  /**
   * One attempt of one event's delivery (the per-event workflow of runs started before delivery by destination).
   * @param input event, organization, run, attempt number, whether it is the last.
   * @returns the outcome and the receiver's Retry-After.
   */
  async function webhookAttempt(input: AttemptInput): Promise<AttemptResult> {
    const [event, integration] = await Promise.all([
      eventOf(input),
      WebhookIntegration.findById(input.organizationId).lean<WebhookIntegrationDoc>(),
    ]);
    if (!event) throw ApplicationFailure.nonRetryable(`Event ${input.eventId} not found`, 'EventMissing');
    const at = new Date();
    const settled = { nextAttemptAt: null, error: null };
    if (!integration?.enabled) {
      await record(
        input,
        event.type,
        at,
        { status: null, latencyMs: 0, error: 'Webhook delivery is disabled', response: null },
        { status: 'failed', ...settled }
      );
      attemptsMetric.inc({ outcome: 'disabled' });
      return { outcome: 'permanent', retryAfterSeconds: null };
    }
    const result = await send(
      integration,
      secretsOf(integration),
      input.eventId,
      event.type,
      event.body,
      input.attempt
    );
    attemptsMetric.inc({ outcome: result.outcome });
    if (result.outcome === 'delivered') observeLag(event.body);
    const status: DeliveryStatus =
      result.outcome === 'delivered'
        ? 'delivered'
        : result.outcome === 'permanent' || input.last
          ? 'failed'
          : 'pending';
    await record(input, event.type, at, result, { status, ...settled });
    if (result.outcome !== 'delivered')
      log.info(
        { eventId: input.eventId, run: input.run, attempt: input.attempt, status: result.status, error: result.error },
        'webhook attempt failed'
      );
    return { outcome: result.outcome, retryAfterSeconds: result.retryAfterSeconds };
  }

  /**
   * @param item an attempt of a batch.
   * @returns whether the delivery log shows that very attempt (run and number) delivered.
   */
  async function deliveredBefore(item: { eventId: string; run: number; attempt: number }): Promise<boolean> {
    const doc = await WebhookDelivery.findById(item.eventId).lean<WebhookDeliveryDoc>();
    return (
      doc?.status === 'delivered' &&
      doc.attempts.some(
        (a) =>
          a.run === item.run &&
          a.attempt === item.attempt &&
          typeof a.status === 'number' &&
          a.status >= 200 &&
          a.status < 300
      )
    );
  }

  /**
   * One attempt of each item of a destination's batch, sent at once, each recorded in the delivery log as it ends
   * (with the next attempt's time when there is one: the long-tail schedule, WEBHOOK_RETRY_TAIL / _FOR).
   * @param input the organization and its attempts.
   * @returns each attempt's fate, in the items' order.
   */
  async function webhookAttempts(input: BatchInput): Promise<BatchResult> {
    const ctx = Context.current();
    let beat: NodeJS.Timeout | undefined;
    const first = setTimeout(() => {
      ctx.heartbeat();
      beat = setInterval(() => ctx.heartbeat(), BATCH_HEARTBEAT_MS);
    }, BATCH_HEARTBEAT_MS);
    try {
      const integration = await WebhookIntegration.findById(input.organizationId).lean<WebhookIntegrationDoc>();
      const secrets = integration?.enabled ? secretsOf(integration) : [];
      // A batch sent again (its worker died before it reported) skips the attempts its first run already saw
      // delivered and recorded: the receiver gets them once. One sent but not yet recorded is sent again, with the
      // same event id, Idempotency-Key and attempt number (at least once; receivers dedupe on the event id).
      const retried = ctx.info.attempt > 1;
      const results = await Promise.all(
        input.items.map(async (item): Promise<ItemResult> => {
          const key = { ...item, organizationId: input.organizationId };
          if (retried && (await deliveredBefore(item))) return { outcome: 'delivered', retryInMs: null };
          const event = await eventOf(item);
          const at = new Date();
          const settled = { nextAttemptAt: null, error: null };
          if (!event || !integration?.enabled) {
            const error = event ? 'Webhook delivery is disabled' : 'The event no longer exists';
            await record(
              key,
              event?.type ?? item.type ?? 'unknown',
              at,
              { status: null, latencyMs: 0, error, response: null },
              { status: 'failed', ...settled }
            );
            return { outcome: 'failed', retryInMs: null };
          }
          const result = await send(integration, secrets, item.eventId, event.type, event.body, item.attempt);
          attemptsMetric.inc({ outcome: result.outcome });
          if (result.outcome === 'delivered') observeLag(event.body);
          const retryInMs =
            result.outcome === 'transient' ? nextAttemptInMs(item.attempt, result.retryAfterSeconds, schedule) : null;
          const outcome = result.outcome === 'delivered' ? 'delivered' : retryInMs === null ? 'failed' : 'retry';
          await record(key, event.type, at, result, {
            status: outcome === 'retry' ? 'pending' : outcome,
            // When the workflow's timer is set: counted from the attempt's end, as the workflow counts it.
            nextAttemptAt: retryInMs === null ? null : new Date(Date.now() + retryInMs),
            error: null,
          });
          if (outcome !== 'delivered')
            log.info(
              { eventId: item.eventId, run: item.run, attempt: item.attempt, status: result.status, retryInMs },
              'webhook attempt failed'
            );
          return { outcome, retryInMs };
        })
      );
      return {
        results,
        disableAfterMs: deps.config.webhookRetry.disableAfterMs,
        changedAt: integration ? new Date(integration.updatedAt).getTime() : 0,
      };
    } finally {
      clearTimeout(first);
      clearInterval(beat);
    }
  }

  /**
   * Ends deliveries without a further attempt (their destination was disabled, or its backlog is full).
   * @param input the organization, the deliveries (event id, run, type when known) and why.
   */
  async function webhookFailPending(input: {
    organizationId: string;
    items: Array<{ eventId: string; run: number; type?: string }>;
    error: string;
  }): Promise<void> {
    const at = new Date();
    for (const item of input.items)
      await WebhookDelivery.updateOne(
        { _id: item.eventId },
        {
          $setOnInsert: { organizationId: input.organizationId, type: item.type ?? 'unknown', attempts: [] },
          $set: {
            status: 'failed',
            run: item.run,
            nextAttemptAt: null,
            error: input.error,
            ...retentionExpiry('deliveryLogMs', at),
          },
        },
        { upsert: true }
      );
  }

  /**
   * Disables a destination that failed every attempt since `failingSince`, and records a `webhook.disabled` event
   * (keyed by the streak: a retried call records it once). The next PUT enables it again.
   * @param input the organization, when its failures began, and how many deliveries it still had.
   * @returns the `webhook.disabled` event's id.
   */
  async function webhookDisable(input: {
    organizationId: string;
    failingSince: number;
    pending: number;
  }): Promise<string> {
    const eventId = eventIdFor(`webhook.disabled:${input.organizationId}:${input.failingSince}`);
    const since = new Date(input.failingSince).toISOString();
    const reason = `Every delivery attempt failed since ${since}`;
    const integration = await WebhookIntegration.findById(input.organizationId).lean<WebhookIntegrationDoc>();
    await insertDocument(ServiceEvent, {
      _id: eventId,
      organizationId: input.organizationId,
      type: 'webhook.disabled',
      data: JSON.stringify({ url: integration?.url ?? null, failingSince: since, reason, pending: input.pending }),
      ...retentionExpiry('deliveryLogMs'),
    }).catch((err: unknown) => {
      if (!isDuplicateKey(err)) throw err; // a retried call recorded it
    });
    await WebhookIntegration.updateOne(
      { _id: input.organizationId, enabled: true },
      { $set: { enabled: false, disabled: { at: new Date(), reason, eventId } } }
    );
    await integrationChanged(input.organizationId);
    log.warn({ organizationId: input.organizationId, failingSince: since, eventId }, 'webhook destination disabled');
    return eventId;
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
    const result = await send(integration, secretsOf(integration), input.eventId, 'test', body, 1);
    return {
      event_id: input.eventId,
      delivered: result.outcome === 'delivered',
      status: result.status,
      latency_ms: result.latencyMs,
      error: result.error,
    };
  }

  return { webhookAttempt, webhookAttempts, webhookFailPending, webhookDisable, webhookSendTest };
}

export type WebhookActivities = ReturnType<typeof createWebhookActivities>;
