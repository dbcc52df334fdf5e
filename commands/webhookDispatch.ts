/**
 * From a recorded event to its destination's delivery workflow (docs/decisions.md "Webhook delivery by
 * destination"): the process that recorded the event signals `webhooks-<organizationId>` (starting it when it is
 * not running) with the event's body, then removes the event's outbox entry; whatever a Temporal outage or a crash
 * left in the outbox, the worker's sweep signals later. The signal's key (event id, run) is the dedupe key: the
 * workflow ignores a key it holds or settled recently, so a duplicate signal is a no-op.
 *
 * Signals to one destination are coalesced per process: while one is on its way, the events recorded meanwhile wait
 * and go together in the next (one signal, one history event, for many events in a burst; no wait when idle).
 */
import { outboxDepth } from '../lib/metrics';
import { TypedSearchAttributes } from '@temporalio/common';
import type { Logger } from '../lib/logger';
import type { TemporalDeps } from '../lib/temporal';
import { OUTBOX_QUEUE, ServiceEvent, WebhookDelivery, WebhookOutbox, type ServiceEventDoc } from '../models';
import { webhookDeliverSignal, type DeliveryInput } from '../workflows/definitions';
import { organizationIdKey, workKindKey } from '../workflows/searchAttributes';
import { destinationWorkflowId } from '../workflows/webhookPolicy';
import type { webhookDestination } from '../workflows/webhookDestination';
import { serviceEventBody, type EventDispatcher, type ServiceEventBody } from './serviceEvents';

/**
 * @param event a recorded event.
 * @param run the delivery run (1, then one more per redelivery).
 * @returns the delivery run, with the body every attempt of the run sends.
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

/** What signalling a destination's workflow takes of the Temporal client. */
type SignalDeps = Pick<TemporalDeps, 'client' | 'taskQueue'>;

/** Events one signal carries at most. */
const SIGNAL_BATCH = 100;

/**
 * Signals deliveries of one organization to its destination's workflow, starting it if it is not running.
 * @param temporal the client.
 * @param organizationId the organization.
 * @param inputs its deliveries.
 */
export async function signalDeliveries(
  temporal: SignalDeps,
  organizationId: string,
  inputs: DeliveryInput[]
): Promise<void> {
  await temporal.client.workflow.signalWithStart<typeof webhookDestination, [DeliveryInput[]]>('webhookDestination', {
    workflowId: destinationWorkflowId(organizationId),
    taskQueue: temporal.taskQueue,
    args: [{ organizationId }],
    signal: webhookDeliverSignal,
    signalArgs: [inputs],
    typedSearchAttributes: new TypedSearchAttributes([
      { key: organizationIdKey, value: organizationId },
      { key: workKindKey, value: 'webhook' },
    ]),
  });
}

interface Waiting {
  input: DeliveryInput;
  done: (err?: unknown) => void;
}

/**
 * @param temporal the client.
 * @returns a function that signals one delivery, coalesced with the others of its organization waiting meanwhile.
 */
export function signalCoalescer(temporal: SignalDeps): (input: DeliveryInput) => Promise<void> {
  const waiting = new Map<string, Waiting[]>();
  const flush = async (organizationId: string): Promise<void> => {
    for (;;) {
      const queue = waiting.get(organizationId)!;
      const batch = queue.splice(0, SIGNAL_BATCH);
      if (batch.length === 0) {
        waiting.delete(organizationId);
        return;
      }
      try {
        await signalDeliveries(
          temporal,
          organizationId,
          batch.map((w) => w.input)
        );
        for (const w of batch) w.done();
      } catch (err) {
        for (const w of batch) w.done(err);
      }
    }
  };
  return (input) =>
    new Promise<void>((resolve, reject) => {
      const done = (err?: unknown): void => (err === undefined ? resolve() : reject(err));
      const queue = waiting.get(input.organizationId);
      if (queue) queue.push({ input, done });
      else {
        waiting.set(input.organizationId, [{ input, done }]);
        void flush(input.organizationId);
      }
    });
}

/**
 * The dispatcher that signals the deliveries of the events recorded with it (commands/serviceEvents.ts `EventDeps`):
 * createApp and createWorker make one each and hand it down through their dependencies.
 * @param temporal the client.
 * @param logger where a failed signal is logged (the outbox sweep retries it).
 * @returns the dispatcher (its signals coalesced per organization).
 */
export function webhookDispatcher(temporal: SignalDeps, logger: Logger): EventDispatcher {
  const signal = signalCoalescer(temporal);
  return async (event) => {
    try {
      await signal(deliveryInput(event, 1));
    } catch (err) {
      logger.warn({ err, eventId: event.id }, 'webhook delivery not signalled; the outbox sweep will signal it');
      return;
    }
    // Temporal has the event: the entry's work is done (left behind, the sweep removes it; a signal again is a no-op).
    await WebhookOutbox.deleteOne({ _id: event.id }).catch((err: unknown) =>
      logger.warn({ err, eventId: event.id }, 'webhook outbox entry not removed; the outbox sweep will remove it')
    );
  };
}

/**
 * An outbox entry younger than this is left alone: the process that wrote it is recording the event and signalling
 * it, and removes the entry once Temporal has it (a signal by the sweep would be a harmless no-op).
 */
const OUTBOX_GRACE_MS = 10_000;
/** An outbox entry whose event never appeared (its writer died between the two inserts) is dropped after this. */
const OUTBOX_ORPHAN_MS = 60_000;
/** Entries one sweep looks at. */
const OUTBOX_BATCH = 500;

/**
 * Signals the delivery of every outbox entry left behind (worker, every few seconds). An event whose delivery log
 * entry exists already reached its destination's workflow (an attempt recorded it): its entry is only removed.
 * @param temporal the client.
 * @param now the time.
 * @returns how many deliveries it signalled.
 */
export async function sweepWebhookOutbox(temporal: TemporalDeps, now = Date.now()): Promise<number> {
  const entries = await WebhookOutbox.find({ queue: OUTBOX_QUEUE }).limit(OUTBOX_BATCH).lean();
  outboxDepth.set(entries.length); // at most one batch: "a batch or more" past OUTBOX_BATCH
  const byOrganization = new Map<string, DeliveryInput[]>();
  const done: string[] = [];
  for (const entry of entries) {
    const age = now - new Date(entry.createdAt).getTime();
    if (age < OUTBOX_GRACE_MS) continue;
    const event = await ServiceEvent.findById(entry._id).lean<ServiceEventDoc>();
    if (!event) {
      if (age > OUTBOX_ORPHAN_MS) await WebhookOutbox.deleteOne({ _id: entry._id });
      continue;
    }
    done.push(entry._id);
    if (await WebhookDelivery.exists({ _id: entry._id })) continue;
    const list = byOrganization.get(event.organizationId) ?? [];
    list.push(deliveryInput(serviceEventBody(event), 1));
    byOrganization.set(event.organizationId, list);
  }
  let signalled = 0;
  for (const [organizationId, inputs] of byOrganization) {
    for (let i = 0; i < inputs.length; i += SIGNAL_BATCH) {
      await signalDeliveries(temporal, organizationId, inputs.slice(i, i + SIGNAL_BATCH));
      signalled += Math.min(SIGNAL_BATCH, inputs.length - i);
    }
  }
  for (const id of done) await WebhookOutbox.deleteOne({ _id: id });
  return signalled;
}

/** How often the worker sweeps the outbox. */
export const OUTBOX_SWEEP_MS = 2_000;

/**
 * Sweeps the outbox every OUTBOX_SWEEP_MS (the worker, for as long as it runs).
 * @param temporal the client.
 * @param logger logs sweep failures.
 * @returns stops the sweep.
 */
export function startWebhookOutboxSweep(temporal: TemporalDeps, logger: Logger): () => void {
  let running = false;
  const timer = setInterval(() => {
    if (running) return;
    running = true;
    sweepWebhookOutbox(temporal)
      .then((n) => n > 0 && logger.info({ signalled: n }, 'webhook outbox sweep signalled deliveries'))
      .catch((err: unknown) => logger.warn({ err }, 'webhook outbox sweep failed'))
      .finally(() => (running = false));
  }, OUTBOX_SWEEP_MS);
  timer.unref();
  return () => clearInterval(timer);
}
