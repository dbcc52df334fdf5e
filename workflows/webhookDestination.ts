/**
 * @module webhookDestination: delivery of every event of one organization's destination (workflow id
 * `webhooks-<organizationId>`, SPEC "Webhook delivery"; docs/decisions.md "Webhook delivery by destination").
 *
 * Events arrive by signal (`deliver`, from the process that recorded them or the outbox sweep), keyed by
 * (event id, run): a key the workflow holds or settled recently is a no-op. Attempts go out in batches (one activity
 * sends up to `batchSize` at once and records each in the delivery log), at most `batchesInFlight` batches at a
 * time, so a slow attempt holds back no other event beyond one attempt's timeout. A failed attempt does not wait in
 * line: its event moves to the retry schedule (the spec's 0 s, 1 s, 2 s, 4 s, then the long tail the activity
 * computes) and goes out again when due, under the next attempt number. One timer (the earliest due retry) wakes the
 * workflow. After a day (WEBHOOK_DISABLE_AFTER) in which every attempt failed, the destination is disabled and what
 * it still held is marked failed. The history stays short: past `historyLimit` events the workflow continues as new,
 * carrying what it still has to deliver and the keys it settled recently. With nothing to deliver for `idleMs` it
 * ends; the next event starts it again.
 */
import { condition, continueAsNew, log, proxyActivities, setHandler, workflowInfo } from '@temporalio/workflow';
import type { BatchItem, ItemResult, WebhookActivities } from '../activities/webhooks';
import { webhookDeliverSignal, type DeliveryInput } from './definitions';
import { deliveryKey, DESTINATION_POLICY as POLICY } from './webhookPolicy';

/**
 * A batch is an ordinary activity, not a local one: the workflow task completes as soon as it is scheduled, so new
 * events (signals) are taken in while batches run. It heartbeats after 2 s, so a worker that dies during it is
 * noticed within the heartbeat timeout and the batch is sent again by another worker (same attempt numbers, same
 * Idempotency-Key). Database failures are retried until they succeed.
 */
const { webhookAttempts, webhookFailPending, webhookDisable } = proxyActivities<WebhookActivities>({
  startToCloseTimeout: '2 minutes',
  heartbeatTimeout: '10 seconds',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '10 seconds' },
});

/** One delivery run the destination still has to settle. */
export interface PendingDelivery extends BatchItem {
  /** When its next attempt is due (workflow time, ms). */
  due: number;
}

/** Input of the workflow: the organization and, after continue-as-new, what the previous run carried over. */
export interface DestinationInput {
  organizationId: string;
  pending?: PendingDelivery[];
  /** Keys settled recently, with when (oldest first). */
  recent?: Array<[string, number]>;
  /** When the current streak of failed attempts began (null: the last attempt delivered, or none yet). */
  failingSince?: number | null;
  /** History events after which it continues as new (default DESTINATION_POLICY.historyLimit; tests lower it). */
  historyLimit?: number;
}

/** How many deliveries one fail-pending activity marks. */
const FAIL_CHUNK = 500;

/**
 * @param input the organization and any carried state.
 * @returns why it ended: nothing left to deliver, or the destination was disabled.
 */
export async function webhookDestination(input: DestinationInput): Promise<'idle' | 'disabled'> {
  const { organizationId } = input;
  const historyLimit = input.historyLimit ?? POLICY.historyLimit;
  /** Fresh deliveries, in arrival order (due at once). */
  const fresh: PendingDelivery[] = [];
  /** Deliveries waiting for a retry, by due time. */
  const retries: PendingDelivery[] = [];
  const known = new Set<string>();
  const recent = new Map<string, number>(input.recent ?? []);
  let failingSince = input.failingSince ?? null;
  let overflow: DeliveryInput[] = [];
  let inFlight = 0;
  let changed = false;
  let disableAfterMs: number | null = null;
  let changedAt = 0;

  const addRetry = (p: PendingDelivery): void => {
    let i = retries.length;
    while (i > 0 && retries[i - 1]!.due > p.due) i--;
    retries.splice(i, 0, p);
  };
  for (const p of input.pending ?? []) {
    known.add(deliveryKey(p.eventId, p.run));
    if (p.attempt === 1) fresh.push(p);
    else addRetry(p);
  }

  setHandler(webhookDeliverSignal, (events) => {
    const now = Date.now();
    for (const e of events) {
      const key = deliveryKey(e.eventId, e.run);
      if (known.has(key) || recent.has(key)) continue;
      known.add(key);
      if (known.size > POLICY.maxPending) overflow.push(e);
      else fresh.push({ eventId: e.eventId, run: e.run, type: e.type, body: e.body, attempt: 1, due: now });
    }
    changed = true;
  });

  const settle = (p: { eventId: string; run: number }, now: number): void => {
    const key = deliveryKey(p.eventId, p.run);
    known.delete(key);
    recent.delete(key);
    recent.set(key, now);
  };
  const prune = (now: number): void => {
    for (const [key, at] of recent) {
      if (recent.size <= POLICY.recentMax && now - at < POLICY.recentMs) break;
      recent.delete(key);
    }
  };

  const runBatch = async (batch: PendingDelivery[]): Promise<void> => {
    inFlight++;
    try {
      let results: ItemResult[];
      try {
        const out = await webhookAttempts({
          organizationId,
          items: batch.map(({ eventId, run, attempt, type, body }) => ({ eventId, run, attempt, type, body })),
        });
        results = out.results;
        disableAfterMs = out.disableAfterMs;
        changedAt = out.changedAt;
      } catch (err) {
        // Only a non-retryable failure (ENCRYPTION_KEY missing) ends up here: the same attempts again in a minute.
        log.warn('webhook batch failed; retried in a minute', { organizationId, error: String(err) });
        for (const p of batch) addRetry({ ...p, due: Date.now() + 60_000 });
        return;
      }
      const now = Date.now();
      if (results.some((r) => r.outcome === 'delivered')) failingSince = null;
      else failingSince ??= now;
      results.forEach((r, i) => {
        const p = batch[i]!;
        if (r.outcome === 'retry') addRetry({ ...p, attempt: p.attempt + 1, due: now + r.retryInMs! });
        else settle(p, now);
      });
    } finally {
      inFlight--;
      changed = true;
    }
  };

  const failAll = async (items: Array<{ eventId: string; run: number; type?: string }>, error: string) => {
    for (let i = 0; i < items.length; i += FAIL_CHUNK) {
      const chunk = items.slice(i, i + FAIL_CHUNK).map(({ eventId, run, type }) => ({ eventId, run, type }));
      await webhookFailPending({ organizationId, items: chunk, error });
      const now = Date.now();
      for (const p of chunk) settle(p, now);
    }
  };

  for (;;) {
    changed = false;
    const now = Date.now();
    prune(now);
    if (overflow.length > 0) {
      const full = overflow;
      overflow = [];
      await failAll(full, `The destination has ${POLICY.maxPending} undelivered events; redeliver this one later`);
      continue;
    }
    const streakStart = failingSince === null ? null : Math.max(failingSince, changedAt);
    if (streakStart !== null && disableAfterMs !== null && now - streakStart >= disableAfterMs) {
      await condition(() => inFlight === 0);
      if (failingSince !== null) {
        const held = [...fresh.splice(0), ...retries.splice(0)];
        await webhookDisable({ organizationId, failingSince: streakStart, pending: held.length });
        await failAll(held, 'Webhook delivery was disabled: every attempt failed for too long');
        // Events signalled while it was being disabled end the same way (none is dropped with the workflow).
        while (fresh.length > 0 || overflow.length > 0)
          await failAll(
            [...fresh.splice(0), ...overflow.splice(0)],
            'Webhook delivery was disabled: every attempt failed for too long'
          );
        return 'disabled';
      }
      continue; // a batch that ended meanwhile delivered
    }
    const longHistory = workflowInfo().historyLength >= historyLimit || workflowInfo().continueAsNewSuggested;
    if (longHistory) {
      if (inFlight === 0) {
        let bodyBytes = 0;
        const pending = [...fresh, ...retries].map((p) => {
          bodyBytes += p.body?.length ?? 0;
          return bodyBytes <= POLICY.carriedBodyBytes ? p : { ...p, body: undefined };
        });
        return continueAsNew<typeof webhookDestination>({
          organizationId,
          pending,
          recent: [...recent],
          failingSince,
          historyLimit: input.historyLimit,
        });
      }
    } else {
      while (inFlight < POLICY.batchesInFlight) {
        const batch: PendingDelivery[] = [];
        while (batch.length < POLICY.batchSize && retries.length > 0 && retries[0]!.due <= now)
          batch.push(retries.shift()!);
        while (batch.length < POLICY.batchSize && fresh.length > 0) batch.push(fresh.shift()!);
        if (batch.length === 0) break;
        void runBatch(batch);
      }
    }
    if (inFlight === 0 && fresh.length === 0 && retries.length === 0) {
      // Ends only if nothing came meanwhile (a signal in the same activation as the timer is not dropped).
      if (!(await condition(() => changed, POLICY.idleMs)) && fresh.length === 0 && overflow.length === 0)
        return 'idle';
      continue;
    }
    const next = retries[0]?.due;
    if (next !== undefined && inFlight < POLICY.batchesInFlight && !longHistory)
      await condition(() => changed, Math.max(1, next - Date.now()));
    else await condition(() => changed);
  }
}
