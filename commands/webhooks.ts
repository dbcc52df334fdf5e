/**
 * Webhook delivery (SPEC "Webhook delivery", /api/messaging-integration): the organization's destination and
 * signing secrets, the delivery log and redelivery. From a recorded event to its destination's delivery workflow
 * (and the outbox sweep): commands/webhookDispatch.ts.
 * Decisions: docs/decisions.md "Webhook delivery", "Webhook delivery by destination".
 */
import { TypedSearchAttributes } from '@temporalio/common';
import type { AuthContext } from './tokens';
import type { Config } from '../lib/config';
import { encryptSecret } from '../lib/crypto';
import { ConflictError, EncryptionUnavailableError, NotFoundError, ValidationError } from '../lib/errors';
import { newId } from '../lib/ids';
import { assertSafeUrl, UnsafeDestinationError } from '../lib/safeDestination';
import { whileTemporalAnswers, type TemporalDeps } from '../lib/temporal';
import { newSigningSecret } from '../lib/webhookSignature';
import {
  ServiceEvent,
  WebhookDelivery,
  WebhookIntegration,
  type ServiceEventDoc,
  type WebhookDeliveryDoc,
  type WebhookIntegrationDoc,
} from '../models';
import { organizationIdKey, workKindKey } from '../workflows/searchAttributes';
import { WEBHOOK_POLICY } from '../workflows/webhookPolicy';
import { integrationChanged, serviceEventBody, type ServiceEventType } from './serviceEvents';
import { deliveryInput, signalDeliveries } from './webhookDispatch';
import type { TestResult } from '../workflows/definitions';
import type { webhookTest } from '../workflows/webhookTest';
import { isDuplicateKey } from '../lib/mongo';

export { startWebhookOutboxSweep, webhookDispatcher } from './webhookDispatch';

export interface IntegrationInput {
  url: string;
  enabled?: boolean;
  event_types?: ServiceEventType[] | null;
}

/** The public view of an integration (never a secret in clear). */
export function presentIntegration(doc: WebhookIntegrationDoc, now = new Date()) {
  const live = doc.secrets.filter((s) => !s.expiresAt || s.expiresAt.getTime() > now.getTime());
  return {
    url: doc.url as string | null,
    enabled: doc.enabled,
    event_types: (doc.eventTypes as string[] | null | undefined) ?? null,
    signing_secrets: live.map((s) => ({
      created_at: s.createdAt.toISOString(),
      expires_at: s.expiresAt ? s.expiresAt.toISOString() : null,
    })),
    disabled: doc.disabled
      ? { at: doc.disabled.at.toISOString(), reason: doc.disabled.reason, event_id: doc.disabled.eventId ?? null }
      : null,
    created_at: doc.createdAt.toISOString() as string | null,
    updated_at: doc.updatedAt.toISOString() as string | null,
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
  const doc = await findIntegration(auth);
  if (!doc) throw new NotFoundError('Webhook delivery is not configured');
  return doc;
}

/**
 * @param auth the caller.
 * @returns the organization's integration, or null when it has none yet (no PUT so far).
 */
export async function findIntegration(auth: AuthContext): Promise<WebhookIntegrationDoc | null> {
  return WebhookIntegration.findById(auth.organizationId).lean<WebhookIntegrationDoc>();
}

/**
 * The public view of an organization that has no integration yet [docs/decisions.md "Reading an unconfigured
 * webhook integration"]: no destination, delivery disabled, no secret.
 * @returns the unconfigured state, in the shape of {@link presentIntegration}.
 */
export function presentUnconfiguredIntegration(): ReturnType<typeof presentIntegration> {
  return {
    url: null,
    enabled: false,
    event_types: null,
    signing_secrets: [],
    disabled: null,
    created_at: null,
    updated_at: null,
  };
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
    disabled: null, // a PUT enables delivery again after it disabled itself
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
      if (!isDuplicateKey(err)) throw err;
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
    next_attempt_at: doc.nextAttemptAt ? doc.nextAttemptAt.toISOString() : null,
    error: doc.error ?? null,
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
 * Delivers an event again: a new run of its delivery (attempts numbered from 1), signalled to its destination's
 * workflow. The log entry moves to `pending` (run n+1) first, conditionally, so a second redelivery meanwhile is 409.
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
  if (delivery) {
    const claimed = await WebhookDelivery.updateOne(
      { _id: eventId, run: delivery.run, status: delivery.status },
      { $set: { status: 'pending', run, nextAttemptAt: null, error: null } }
    );
    if (claimed.matchedCount === 0) throw new ConflictError('A delivery of this event is in progress');
  }
  try {
    await signalDeliveries(temporal, auth.organizationId, [deliveryInput(serviceEventBody(event), run)]);
  } catch (err) {
    if (delivery)
      await WebhookDelivery.updateOne(
        { _id: eventId, run, status: 'pending' },
        { $set: { status: delivery.status, run: delivery.run } }
      );
    throw err;
  }
  return run;
}
