/**
 * Webhook delivery (SPEC "Webhook delivery", /api/messaging-integration): the organization's destination and
 * signing secrets, the start of one delivery workflow `webhook-<eventId>` per recorded event, the outbox sweep that
 * starts what a Temporal outage or a crash left unstarted, the delivery log and redelivery.
 * Decisions: docs/decisions.md "Webhook delivery".
 */
import { outboxDepth } from '../lib/metrics';
import { TypedSearchAttributes } from '@temporalio/common';
import { WorkflowExecutionAlreadyStartedError } from '@temporalio/client';
import { WorkflowIdReusePolicy } from '@temporalio/common';
import type { AuthContext } from './tokens';
import type { Config } from '../lib/config';
import { decryptSecret, encryptSecret } from '../lib/crypto';
import { ConflictError, EncryptionUnavailableError, NotFoundError, ValidationError } from '../lib/errors';
import { newId } from '../lib/ids';
import type { Logger } from '../lib/logger';
import { assertSafeUrl, UnsafeDestinationError } from '../lib/safeDestination';
import { whileTemporalAnswers, type TemporalDeps } from '../lib/temporal';
import { newSigningSecret } from '../lib/webhookSignature';
import {
  OUTBOX_QUEUE,
  ServiceEvent,
  WebhookDelivery,
  WebhookIntegration,
  WebhookOutbox,
  type ServiceEventDoc,
  type WebhookDeliveryDoc,
  type WebhookIntegrationDoc,
} from '../models';
import { organizationIdKey, workKindKey } from '../workflows/searchAttributes';
import { WEBHOOK_POLICY, webhookWorkflowId } from '../workflows/webhookPolicy';
import {
  integrationChanged,
  serviceEventBody,
  setEventDispatcher,
  type ServiceEventBody,
  type ServiceEventType,
} from './serviceEvents';
import type { webhookDelivery } from '../workflows/webhookDelivery';
import type { webhookTest } from '../workflows/webhookTest';

/** Input of the delivery workflow. */
export interface DeliveryInput {
  eventId: string;
  organizationId: string;
  /** 1 for the first delivery, n+1 for each redelivery. */
  run: number;
  /** The event's type. */
  type?: string;
  /**
   * The exact JSON body sent (SPEC "Webhook delivery"), so that an attempt needs no read of the event. Absent only
   * in runs started before it was passed: their attempts read the event.
   */
  body?: string;
}

/**
 * @param event a recorded event.
 * @param run the delivery run (1, then one more per redelivery).
 * @returns the input of its delivery workflow, with the body every attempt of the run sends.
 */
export function deliveryInput(event: ServiceEventBody, run: number): DeliveryInput {
  return {
    eventId: event.id,
    organizationId: event.organizationId,
    run,
    type: event.type,
    body: JSON.stringify(event),
  };
}

export interface IntegrationInput {
  url: string;
  enabled?: boolean;
  event_types?: ServiceEventType[] | null;
}

export interface TestResult {
  event_id: string;
  delivered: boolean;
  status: number | null;
  latency_ms: number;
  error: string | null;
}

/**
 * An outbox entry younger than this is left alone: the process that wrote it is recording the event and starting
 * the workflow, and removes the entry once Temporal has it (a start by the sweep would be a harmless no-op).
 */
const OUTBOX_GRACE_MS = 10_000;
/** An outbox entry whose event never appeared (its writer died between the two inserts) is dropped after this. */
const OUTBOX_ORPHAN_MS = 60_000;
/** Entries one sweep looks at. */
const OUTBOX_BATCH = 500;

/**
 * @param integration a stored integration.
 * @param key the AES key.
 * @param now the time.
 * @returns the secrets that sign now, current first.
 */
export function signingSecrets(integration: WebhookIntegrationDoc, key: Buffer, now = new Date()): string[] {
  return integration.secrets
    .filter((s) => s.expiresAt === null || s.expiresAt === undefined || s.expiresAt.getTime() > now.getTime())
    .sort((a, b) => (a.expiresAt ? 1 : 0) - (b.expiresAt ? 1 : 0))
    .map((s) => decryptSecret(key, s.sealed));
}

/** The public view of an integration (never a secret in clear). */
export function presentIntegration(doc: WebhookIntegrationDoc, now = new Date()) {
  const live = doc.secrets.filter((s) => !s.expiresAt || s.expiresAt.getTime() > now.getTime());
  return {
    url: doc.url,
    enabled: doc.enabled,
    event_types: (doc.eventTypes as string[] | null | undefined) ?? null,
    signing_secrets: live.map((s) => ({
      created_at: s.createdAt.toISOString(),
      expires_at: s.expiresAt ? s.expiresAt.toISOString() : null,
    })),
    created_at: doc.createdAt.toISOString(),
    updated_at: doc.updatedAt.toISOString(),
  };
}

function requireKey(key: Buffer | undefined): Buffer {
  if (!key) throw new EncryptionUnavailableError();
  return key;
}

function checkUrl(url: string, config: Pick<Config, 'webhookAllowPrivate'>): void {
  try {
    assertSafeUrl(url, { allowPrivate: config.webhookAllowPrivate });
  } catch (err) {
    if (err instanceof UnsafeDestinationError) throw new ValidationError(err.message);
    throw err;
  }
}

/**
 * @param auth the caller.
 * @returns the organization's integration.
 * @throws NotFoundError when none was configured.
 */
export async function getIntegration(auth: AuthContext): Promise<WebhookIntegrationDoc> {
  const doc = await WebhookIntegration.findById(auth.organizationId).lean<WebhookIntegrationDoc>();
  if (!doc) throw new NotFoundError('Webhook delivery is not configured');
  return doc;
}

/**
 * Sets the destination; the first call creates the signing secret and returns it (the only time it is shown).
 * @param auth the caller.
 * @param input url, enabled (default true), event types (default: all).
 * @param config encryption key and WEBHOOK_ALLOW_PRIVATE.
 * @returns the integration and, on creation, the clear secret.
 */
export async function putIntegration(
  auth: AuthContext,
  input: IntegrationInput,
  config: Pick<Config, 'encryptionKey' | 'webhookAllowPrivate'>
): Promise<{ integration: WebhookIntegrationDoc; signingSecret: string | null; created: boolean }> {
  const key = requireKey(config.encryptionKey);
  checkUrl(input.url, config);
  const fields = {
    url: input.url,
    enabled: input.enabled ?? true,
    eventTypes: input.event_types && input.event_types.length > 0 ? [...new Set(input.event_types)] : null,
  };
  const existing = await WebhookIntegration.findById(auth.organizationId).lean<WebhookIntegrationDoc>();
  if (!existing) {
    const secret = newSigningSecret();
    try {
      const doc = await WebhookIntegration.create({
        _id: auth.organizationId,
        ...fields,
        secrets: [{ sealed: encryptSecret(key, secret), createdAt: new Date(), expiresAt: null }],
      });
      await integrationChanged(auth.organizationId);
      return { integration: doc.toObject() as WebhookIntegrationDoc, signingSecret: secret, created: true };
    } catch (err) {
      if ((err as { code?: unknown }).code !== 11000) throw err;
      // A concurrent first PUT created it: this one is an update.
    }
  }
  await WebhookIntegration.updateOne({ _id: auth.organizationId }, { $set: fields });
  await integrationChanged(auth.organizationId);
  return { integration: await getIntegration(auth), signingSecret: null, created: false };
}

/**
 * Rotates the signing secret.
 * @param auth the caller.
 * @param graceSeconds how long the previous secret still signs (0: it stops at once).
 * @param config encryption key.
 * @returns the integration and the new clear secret (shown once).
 */
export async function rotateSigningSecret(
  auth: AuthContext,
  graceSeconds: number,
  config: Pick<Config, 'encryptionKey'>
): Promise<{ integration: WebhookIntegrationDoc; signingSecret: string }> {
  const key = requireKey(config.encryptionKey);
  if (graceSeconds > WEBHOOK_POLICY.maxGraceSeconds)
    throw new ValidationError(`grace_period_seconds must be at most ${WEBHOOK_POLICY.maxGraceSeconds}`);
  const doc = await getIntegration(auth);
  const now = new Date();
  const secret = newSigningSecret();
  const kept = doc.secrets
    .filter((s) => s.expiresAt && s.expiresAt.getTime() > now.getTime())
    .map((s) => ({ sealed: s.sealed, createdAt: s.createdAt, expiresAt: s.expiresAt }));
  const previous = doc.secrets.find((s) => !s.expiresAt);
  if (previous && graceSeconds > 0)
    kept.push({
      sealed: previous.sealed,
      createdAt: previous.createdAt,
      expiresAt: new Date(now.getTime() + graceSeconds * 1000),
    });
  const secrets = [{ sealed: encryptSecret(key, secret), createdAt: now, expiresAt: null }, ...kept];
  await WebhookIntegration.updateOne({ _id: auth.organizationId }, { $set: { secrets } });
  await integrationChanged(auth.organizationId);
  return { integration: await getIntegration(auth), signingSecret: secret };
}

/**
 * Starts the delivery workflow of one event.
 * @param temporal the client.
 * @param input event, organization and run.
 * @param redelivery a redelivery may start a new run of a closed workflow; a first delivery never does (a
 * duplicate emit is a no-op).
 * @returns whether this call started it (false: it already was).
 */
export async function startDelivery(
  temporal: TemporalDeps,
  input: DeliveryInput,
  redelivery = false
): Promise<boolean> {
  try {
    await temporal.client.workflow.start<typeof webhookDelivery>('webhookDelivery', {
      workflowId: webhookWorkflowId(input.eventId),
      taskQueue: temporal.taskQueue,
      args: [input],
      workflowIdReusePolicy: redelivery
        ? WorkflowIdReusePolicy.ALLOW_DUPLICATE
        : WorkflowIdReusePolicy.REJECT_DUPLICATE,
      typedSearchAttributes: new TypedSearchAttributes([
        { key: organizationIdKey, value: input.organizationId },
        { key: workKindKey, value: 'webhook' },
      ]),
    });
    return true;
  } catch (err) {
    if (err instanceof WorkflowExecutionAlreadyStartedError) return false;
    throw err;
  }
}

/**
 * Makes this process start delivery workflows for the events it records (api and worker call it once).
 * @param temporal the client.
 * @param logger where a failed start is logged (the outbox sweep retries it).
 */
export function installWebhookDispatcher(temporal: TemporalDeps, logger: Logger): void {
  setEventDispatcher(async (event) => {
    try {
      await startDelivery(temporal, deliveryInput(event, 1));
    } catch (err) {
      logger.warn({ err, eventId: event.id }, 'webhook delivery not started; the outbox sweep will start it');
      return;
    }
    // Temporal has the workflow: the entry's work is done (left behind, the sweep's start is a no-op that removes it).
    await WebhookOutbox.deleteOne({ _id: event.id }).catch((err: unknown) =>
      logger.warn({ err, eventId: event.id }, 'webhook outbox entry not removed; the outbox sweep will remove it')
    );
  });
}

/**
 * Starts the delivery of every outbox entry left behind (worker, every few seconds).
 * @param temporal the client.
 * @param now the time.
 * @returns how many deliveries it started or found started.
 */
export async function sweepWebhookOutbox(temporal: TemporalDeps, now = Date.now()): Promise<number> {
  const entries = await WebhookOutbox.find({ queue: OUTBOX_QUEUE }).limit(OUTBOX_BATCH).lean();
  outboxDepth.set(entries.length); // at most one batch: "a batch or more" past OUTBOX_BATCH
  let handled = 0;
  for (const entry of entries) {
    const age = now - new Date(entry.createdAt).getTime();
    if (age < OUTBOX_GRACE_MS) continue;
    const event = await ServiceEvent.findById(entry._id).lean<ServiceEventDoc>();
    if (!event) {
      if (age > OUTBOX_ORPHAN_MS) await WebhookOutbox.deleteOne({ _id: entry._id });
      continue;
    }
    await startDelivery(temporal, deliveryInput(serviceEventBody(event), 1));
    await WebhookOutbox.deleteOne({ _id: entry._id });
    handled += 1;
  }
  return handled;
}

/** How often the worker sweeps the outbox. */
export const OUTBOX_SWEEP_MS = 2_000;

/**
 * Installs the dispatcher and sweeps the outbox every OUTBOX_SWEEP_MS (the worker, for as long as it runs).
 * @param temporal the client.
 * @param logger logs sweep failures.
 * @returns stops the sweep.
 */
export function startWebhookOutboxSweep(temporal: TemporalDeps, logger: Logger): () => void {
  installWebhookDispatcher(temporal, logger);
  let running = false;
  const timer = setInterval(() => {
    if (running) return;
    running = true;
    sweepWebhookOutbox(temporal)
      .then((n) => n > 0 && logger.info({ started: n }, 'webhook outbox sweep started deliveries'))
      .catch((err: unknown) => logger.warn({ err }, 'webhook outbox sweep failed'))
      .finally(() => (running = false));
  }, OUTBOX_SWEEP_MS);
  timer.unref();
  return () => clearInterval(timer);
}

/**
 * Sends a signed `test` delivery now (through the worker, like every outbound request) and waits for its outcome.
 * @param auth the caller.
 * @param deps Temporal and the configuration.
 * @returns the receiver's status and latency.
 */
export async function sendTestDelivery(
  auth: AuthContext,
  deps: { temporal: TemporalDeps; config: Readonly<Config> }
): Promise<TestResult> {
  await getIntegration(auth);
  const eventId = newId('evt');
  const handle = await deps.temporal.client.workflow.start<typeof webhookTest>('webhookTest', {
    workflowId: `webhook-test-${eventId}`,
    taskQueue: deps.temporal.taskQueue,
    args: [{ eventId, organizationId: auth.organizationId }],
    typedSearchAttributes: new TypedSearchAttributes([
      { key: organizationIdKey, value: auth.organizationId },
      { key: workKindKey, value: 'webhook' },
    ]),
  });
  return whileTemporalAnswers(deps.temporal, deps.config.dependencyTimeoutMs, () => handle.result());
}

/** The public view of a delivery log entry. */
export function presentDelivery(doc: WebhookDeliveryDoc) {
  return {
    event_id: doc._id,
    event_type: doc.type,
    status: doc.status,
    run: doc.run,
    attempts: [...doc.attempts]
      .sort((a, b) => b.run - a.run || b.attempt - a.attempt)
      .map((a) => ({
        run: a.run,
        attempt: a.attempt,
        at: a.at.toISOString(),
        status: a.status ?? null,
        latency_ms: a.latencyMs,
        error: a.error ?? null,
        response: a.response ?? null,
      })),
    created_at: doc.createdAt.toISOString(),
    updated_at: doc.updatedAt.toISOString(),
  };
}

/**
 * @param auth the caller.
 * @param limit how many (newest first).
 * @returns the organization's latest deliveries.
 */
export async function listDeliveries(auth: AuthContext, limit: number): Promise<WebhookDeliveryDoc[]> {
  return WebhookDelivery.find({ organizationId: auth.organizationId })
    .sort({ createdAt: -1, _id: -1 })
    .limit(limit)
    .lean<WebhookDeliveryDoc[]>();
}

/**
 * Delivers an event again (a new run of `webhook-<eventId>`, attempts numbered from 1).
 * @param auth the caller.
 * @param eventId an event of the organization.
 * @param temporal the client.
 * @returns the run started.
 */
export async function redeliver(auth: AuthContext, eventId: string, temporal: TemporalDeps): Promise<number> {
  const event = await ServiceEvent.findOne({
    _id: eventId,
    organizationId: auth.organizationId,
  }).lean<ServiceEventDoc>();
  if (!event) throw new NotFoundError('Event not found');
  const integration = await getIntegration(auth);
  if (!integration.enabled) throw new ConflictError('Webhook delivery is disabled');
  const delivery = await WebhookDelivery.findById(eventId).lean<WebhookDeliveryDoc>();
  if (delivery?.status === 'pending') throw new ConflictError('A delivery of this event is in progress');
  const run = (delivery?.run ?? 0) + 1;
  const started = await startDelivery(temporal, deliveryInput(serviceEventBody(event), run), true);
  if (!started) throw new ConflictError('A delivery of this event is in progress');
  return run;
}
