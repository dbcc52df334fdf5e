/**
 * Webhook delivery policy (SPEC "Webhook delivery", docs/decisions.md "Webhook delivery"): the one place these
 * numbers live, except the attempt's timeout, a setting (WEBHOOK_TIMEOUT_MS, lib/config.ts). Deterministic constants
 * only: the delivery workflow imports it.
 */
export const WEBHOOK_POLICY = {
  /** Waits before the 2nd, 3rd, 4th and 5th attempt after a transient failure (the first attempt goes at once). */
  retryDelaysSeconds: [0, 1, 2, 4],
  /** A receiver's `Retry-After` lengthens a wait up to this many seconds (never shortens the schedule). */
  retryAfterCapSeconds: 60,
  /** The most of a receiver's answer that is read (the rest is dropped and the socket closed). */
  maxResponseBytes: 64 * 1024,
  /** The first bytes of a receiver's answer kept with the attempt in the delivery log. */
  logResponseBytes: 1024,
  /** Longest grace period of a rotated-out signing secret. */
  maxGraceSeconds: 86_400,
  /** Attempts kept per event in the delivery log (the newest). */
  logAttemptsPerEvent: 50,
} as const;

/** @returns the number of attempts of one delivery run (1 + the retries). */
export const WEBHOOK_MAX_ATTEMPTS = WEBHOOK_POLICY.retryDelaysSeconds.length + 1;

/**
 * @param eventId the event.
 * @returns `webhook-<eventId>`: the per-event delivery workflow of runs started before delivery by destination.
 */
export function webhookWorkflowId(eventId: string): string {
  return `webhook-${eventId}`;
}

/**
 * Delivery by destination (workflows/webhookDestination.ts; docs/decisions.md "Webhook delivery by destination").
 */
export const DESTINATION_POLICY = {
  /** Attempts one activity sends at once (concurrently), and records. */
  batchSize: 20,
  /** Batches in flight at once per destination: at most batchSize × batchesInFlight requests to one receiver. */
  batchesInFlight: 3,
  /** Undelivered events one destination holds; past it a new event fails at once (redeliver sends it later). */
  maxPending: 10_000,
  /** Settled deliveries remembered (a duplicate signal of one of them is a no-op): this long, at most this many. */
  recentMs: 10 * 60_000,
  recentMax: 5_000,
  /** A destination with nothing to deliver for this long ends its workflow (the next event starts a new one). */
  idleMs: 60_000,
  /** History events after which the workflow continues as new, carrying what it still has to deliver. */
  historyLimit: 2_000,
  /** Bodies carried across continue-as-new, in total (past it, their attempts read the stored event). */
  carriedBodyBytes: 256 * 1024,
} as const;

/**
 * The waits before the 2nd, 3rd, … attempt: the spec's 0 s, 1 s, 2 s and 4 s, then the long tail (WEBHOOK_RETRY_TAIL,
 * its last wait repeated) for as long as the scheduled waits add up to at most WEBHOOK_RETRY_FOR.
 * @param tailMs the long tail's waits (ms).
 * @param forMs how long after the first attempt an event is still retried.
 * @returns the waits in ms; attempts = 1 + its length.
 */
export function retryScheduleMs(tailMs: readonly number[], forMs: number): number[] {
  const waits: number[] = WEBHOOK_POLICY.retryDelaysSeconds.map((s) => s * 1000);
  let total = waits.reduce((a, b) => a + b, 0);
  for (let i = 0; tailMs.length > 0; i++) {
    const next = tailMs[Math.min(i, tailMs.length - 1)]!;
    if (total + next > forMs) break;
    waits.push(next);
    total += next;
  }
  return waits;
}

/**
 * @param attempt the attempt that just failed (from 1).
 * @param retryAfterSeconds the receiver's Retry-After, if any (lengthens a wait up to retryAfterCapSeconds).
 * @param schedule retryScheduleMs's waits.
 * @returns ms until the next attempt, or null when that was the last one.
 */
export function nextAttemptInMs(
  attempt: number,
  retryAfterSeconds: number | null,
  schedule: readonly number[]
): number | null {
  const scheduled = schedule[attempt - 1];
  if (scheduled === undefined) return null;
  return Math.max(scheduled, Math.min(retryAfterSeconds ?? 0, WEBHOOK_POLICY.retryAfterCapSeconds) * 1000);
}

/**
 * @param organizationId the organization (its one destination).
 * @returns `webhooks-<organizationId>`, the destination's delivery workflow.
 */
export function destinationWorkflowId(organizationId: string): string {
  return `webhooks-${organizationId}`;
}

/**
 * @param eventId an event.
 * @param run its delivery run.
 * @returns the dedupe key of one delivery run: a signal carrying a key the destination has is a no-op.
 */
export function deliveryKey(eventId: string, run: number): string {
  return `${eventId}:${run}`;
}
