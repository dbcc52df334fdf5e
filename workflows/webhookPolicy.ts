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
 * @returns `webhook-<eventId>` (ARCHITECTURE.md §5).
 */
export function webhookWorkflowId(eventId: string): string {
  return `webhook-${eventId}`;
}
