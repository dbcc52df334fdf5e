/**
 * The one way a durable state change becomes a service event (SPEC "Webhook delivery"): jobs, missions,
 * executions, chats, tasks and repository clones call {@link recordEvent}; webhook delivery reads what it recorded.
 *
 * An event recorded from a retried step (a Temporal activity, a repeated request) passes a `key` that names the
 * change (for example `job-<id>:status:3`): the event id is derived from it, so a repeat records nothing new and
 * returns the first event.
 *
 * Delivery (docs/decisions.md "Webhook delivery", "Webhook delivery by destination"): when the organization's
 * enabled destination wants the type, an outbox entry (`_id` = event id) is written BEFORE the event, and once the
 * event is recorded the dispatcher the caller hands down (commands/webhookDispatch.ts `webhookDispatcher`, made
 * by createApp and createWorker and passed through their dependencies: {@link EventDeps}) signals the destination's workflow `webhooks-<organizationId>` with the event's body and removes the entry.
 * Whatever a Temporal outage or a crash leaves in the outbox, the worker's sweep signals; the workflow ignores an
 * event it already has, so nothing is lost or delivered twice.
 */
import { sha256Hex } from '../lib/crypto';
import { retentionExpiry } from '../lib/expiry';
import { newId } from '../lib/ids';
import { insertDocument, insertDocumentsOnce, isDuplicateKey } from '../lib/mongo';
import { invalidate, SharedCache } from '../lib/sharedCache';
import { wakeStream } from '../lib/wakeups';
import {
  OUTBOX_QUEUE,
  ServiceEvent,
  WebhookIntegration,
  WebhookOutbox,
  type ServiceEventDoc,
  type WebhookIntegrationDoc,
} from '../models';

/** Every event type the service records; docs/current-surface.md lists each `data` shape. */
export const SERVICE_EVENT_TYPES = [
  'job.created',
  'job.status_changed',
  'job.review_requested',
  'job.review_overdue',
  'job.review_escalated',
  'job.done',
  'mission.run_started',
  'mission.run_skipped',
  'mission.updated',
  'execution.completed',
  'execution.failed',
  'chat.status_changed',
  'task.created',
  'task.updated',
  'task.status_changed',
  'task.completed',
  'task.assigned',
  'repo.clone_started',
  'repo.clone_completed',
  'repo.clone_failed',
  'budget.threshold',
] as const;
export type ServiceEventType = (typeof SERVICE_EVENT_TYPES)[number];

/** The public JSON body of an event. */
export interface ServiceEventBody {
  id: string;
  type: ServiceEventType;
  createdAt: string;
  organizationId: string;
  data: Record<string, unknown>;
}

export interface RecordEventInput {
  type: ServiceEventType;
  organizationId: string;
  data: Record<string, unknown>;
  /** Names the change when the caller may repeat it; the same key always gives the same event id. */
  key?: string;
}

/**
 * @param key a name of one change.
 * @returns its event id, `evt_` + 32 hex characters.
 */
export function eventIdFor(key: string): string {
  return `evt_${sha256Hex(key).slice(0, 32)}`;
}

/**
 * @param doc a stored event.
 * @returns its public body.
 */
export function serviceEventBody(doc: ServiceEventDoc): ServiceEventBody {
  return {
    id: doc._id,
    type: doc.type as ServiceEventType,
    createdAt: new Date(doc.createdAt).toISOString(),
    organizationId: doc.organizationId,
    data: JSON.parse(doc.data) as Record<string, unknown>,
  };
}

/** Starts the delivery of a recorded event; never throws (a failure leaves the outbox entry for the sweep). */
export type EventDispatcher = (event: ServiceEventBody) => Promise<void>;

/**
 * What recording an event takes besides the database: the dispatcher of the process (commands/webhookDispatch.ts
 * `webhookDispatcher`), injected through the api's and the activities' dependencies. Without one (a script, a test
 * that looks at the records only), an event for a destination waits in the outbox for the worker's sweep.
 */
export interface EventDeps {
  dispatchEvent?: EventDispatcher;
}

/**
 * @param integration the organization's destination, if any.
 * @param type an event type.
 * @returns whether the destination is enabled and wants this type.
 */
export function integrationWants(integration: WebhookIntegrationDoc | null, type: string): boolean {
  if (!integration?.enabled) return false;
  const types = integration.eventTypes as string[] | null | undefined;
  return !types || types.length === 0 || types.includes(type);
}

/**
 * Records one event (an insert by `_id`; a repeat of the same `key` is a no-op).
 * @param input type, organization, data and optional key.
 * @param deps the dispatcher that starts its delivery.
 * @returns the event's body and whether this call recorded it.
 */
export async function recordEvent(
  input: RecordEventInput,
  deps: EventDeps = {}
): Promise<{ event: ServiceEventBody; created: boolean }> {
  return recordWith(input, await integrationOf(input.organizationId), deps.dispatchEvent);
}

/**
 * Records events of one organization that one change produces together, in order, reading the organization's
 * webhook destination once for all of them.
 * @param organizationId the organization of every event.
 * @param inputs the events (each with its own type, data and optional key).
 * @param deps the dispatcher that starts their deliveries.
 */
export async function recordEvents(
  organizationId: string,
  inputs: Omit<RecordEventInput, 'organizationId'>[],
  deps: EventDeps = {}
): Promise<void> {
  if (inputs.length === 0) return;
  const integration = await integrationOf(organizationId);
  // Nothing to deliver (most organizations have no destination): the events go in one round trip.
  if (inputs.length > 1 && inputs.every((input) => !integrationWants(integration, input.type))) {
    const createdAt = new Date();
    await insertDocumentsOnce(
      ServiceEvent,
      inputs.map((input) => ({
        _id: input.key === undefined ? newId('evt') : eventIdFor(input.key),
        organizationId,
        type: input.type,
        data: JSON.stringify(input.data),
        createdAt,
        ...retentionExpiry('deliveryLogMs', createdAt),
      }))
    );
    wakeOrganizationReaders(organizationId);
    return;
  }
  for (const input of inputs) await recordWith({ ...input, organizationId }, integration, deps.dispatchEvent);
}

/**
 * Webhook destinations by organization, none included (most organizations have none): kept per process for
 * CACHE_TTL_MS, cleared by every change of the destination (integrationChanged).
 */
const WEBHOOK_INTEGRATIONS = 'webhook-integration';
const integrations = new SharedCache<{ doc: WebhookIntegrationDoc | null }>(WEBHOOK_INTEGRATIONS);

async function integrationOf(organizationId: string): Promise<WebhookIntegrationDoc | null> {
  const found = await integrations.get(organizationId, async () => ({
    value: { doc: await WebhookIntegration.findById(organizationId).lean<WebhookIntegrationDoc>() },
    group: organizationId,
  }));
  return found!.doc;
}

/**
 * Tells every process that an organization's webhook destination changed (call after the write).
 * @param organizationId the organization.
 */
export function integrationChanged(organizationId: string): Promise<void> {
  return invalidate(WEBHOOK_INTEGRATIONS, organizationId);
}

/**
 * The wake-up name of an organization's service events (lib/wakeups.ts): readers of GET /api/events
 * (commands/organizationEvents.ts) read the organization's new events when it comes.
 * @param organizationId the organization.
 * @returns the name.
 */
export function organizationEventsWakeup(organizationId: string): string {
  return `service-events:${organizationId}`;
}

/** A datagram to the api processes (no database write): their organization-event readers read at once. */
function wakeOrganizationReaders(organizationId: string): void {
  wakeStream(organizationEventsWakeup(organizationId), 0);
}

async function recordWith(
  input: RecordEventInput,
  integration: WebhookIntegrationDoc | null,
  dispatch: EventDispatcher | undefined
): Promise<{ event: ServiceEventBody; created: boolean }> {
  const _id = input.key === undefined ? newId('evt') : eventIdFor(input.key);
  const deliver = integrationWants(integration, input.type);
  /** Whether this call wrote the outbox entry (false: a call before it wrote it and has not settled it yet). */
  let outboxWritten = false;
  if (deliver)
    await insertDocument(WebhookOutbox, { _id, organizationId: input.organizationId, queue: OUTBOX_QUEUE }).then(
      () => (outboxWritten = true),
      (err: unknown) => {
        if (!isDuplicateKey(err)) throw err; // a repeat wrote it
      }
    );
  let event: ServiceEventBody;
  let created = true;
  try {
    const createdAt = new Date(); // one clock read: the event expires exactly DELIVERY_LOG_RETENTION after it
    const doc = await insertDocument(ServiceEvent, {
      _id,
      organizationId: input.organizationId,
      type: input.type,
      data: JSON.stringify(input.data),
      createdAt,
      ...retentionExpiry('deliveryLogMs', createdAt),
    });
    event = serviceEventBody(doc as ServiceEventDoc);
    wakeOrganizationReaders(input.organizationId);
  } catch (err) {
    if (!isDuplicateKey(err)) throw err;
    const existing = await ServiceEvent.findById(_id).lean<ServiceEventDoc>();
    if (!existing) throw err;
    event = serviceEventBody(existing);
    created = false;
  }
  if (!deliver) return { event, created };
  if (!created && outboxWritten) {
    // A repeat of an event whose first call settled its outbox entry (its delivery was signalled, or the event was
    // recorded while delivery was off): nothing to deliver; the entry this call wrote goes.
    await WebhookOutbox.deleteOne({ _id });
    return { event, created };
  }
  // The first call, or a repeat while the first call's entry is still there (that call may have died before its
  // signal): signalled; a duplicate signal is a no-op for the destination's workflow.
  if (dispatch) await dispatch(event);
  return { event, created };
}
