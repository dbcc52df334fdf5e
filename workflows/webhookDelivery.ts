/**
 * @module webhookDelivery: one event's delivery to its organization's destination (workflow id
 * `webhook-<eventId>`, SPEC "Webhook delivery"). Each attempt is one activity that sends once and records itself in
 * the delivery log; the waits between attempts are workflow timers (0 s, 1 s, 2 s, 4 s after transient failures,
 * lengthened by a receiver's Retry-After up to a cap), so attempt numbers, per-attempt timestamps and spacing are
 * exact and survive a worker restart. After the last transient failure the activity marks the delivery failed.
 */
import { proxyActivities, sleep } from '@temporalio/workflow';
import type { WebhookActivities } from '../activities/webhooks';
import type { DeliveryInput } from '../commands/webhooks';
import { WEBHOOK_MAX_ATTEMPTS, WEBHOOK_POLICY } from './webhookPolicy';

/**
 * The attempt activity: its own HTTP timeout is WEBHOOK_POLICY.attemptTimeoutMs; a worker that dies during it is
 * noticed after startToCloseTimeout and the same attempt is sent again (receivers dedupe on Idempotency-Key).
 * Database failures are retried by Temporal until they succeed.
 */
const { webhookAttempt } = proxyActivities<WebhookActivities>({
  startToCloseTimeout: '20 seconds',
  retry: { initialInterval: '500 milliseconds', backoffCoefficient: 2, maximumInterval: '10 seconds' },
});

/**
 * @param input event, organization and run.
 * @returns the final status of this run.
 */
export async function webhookDelivery(input: DeliveryInput): Promise<'delivered' | 'failed'> {
  for (let attempt = 1; attempt <= WEBHOOK_MAX_ATTEMPTS; attempt++) {
    const result = await webhookAttempt({ ...input, attempt, last: attempt === WEBHOOK_MAX_ATTEMPTS });
    if (result.outcome === 'delivered') return 'delivered';
    if (result.outcome === 'permanent' || attempt === WEBHOOK_MAX_ATTEMPTS) return 'failed';
    const scheduled = WEBHOOK_POLICY.retryDelaysSeconds[attempt - 1] ?? 0;
    const asked = Math.min(result.retryAfterSeconds ?? 0, WEBHOOK_POLICY.retryAfterCapSeconds);
    const waitSeconds = Math.max(scheduled, asked);
    if (waitSeconds > 0) await sleep(waitSeconds * 1000);
  }
  return 'failed';
}
