/**
 * @module webhookDelivery: KEPT FOR RUNS STARTED BEFORE DELIVERY BY DESTINATION (workflows/webhookDestination.ts
 * delivers every new event; nothing starts this one any more, but a run recorded by earlier code must finish and
 * replay on this code: leave it unchanged). One event's delivery to its organization's destination (workflow id
 * `webhook-<eventId>`, SPEC "Webhook delivery"). Each attempt is one activity that sends once and records itself in
 * the delivery log; the waits between attempts are workflow timers (0 s, 1 s, 2 s, 4 s after transient failures,
 * lengthened by a receiver's Retry-After up to a cap), so attempt numbers, per-attempt timestamps and spacing are
 * exact and survive a worker restart. After the last transient failure the activity marks the delivery failed.
 */
import { proxyLocalActivities, sleep } from '@temporalio/workflow';
import type { WebhookActivities } from '../activities/webhooks';
import type { DeliveryInput } from './definitions';
import { WEBHOOK_MAX_ATTEMPTS, WEBHOOK_POLICY } from './webhookPolicy';

/**
 * The attempt, as a local activity: it runs in the worker that runs the workflow task, with no activity task of its
 * own for the server to schedule, dispatch and record (the throughput cut measured in docs/benchmarks.md, as for
 * finishExecution). Its HTTP timeout is the setting WEBHOOK_TIMEOUT_MS (at most 15 s, well within the 20 s below); a
 * worker that dies during it leaves the workflow task to time out, and the next worker sends the same attempt again
 * (receivers dedupe on Idempotency-Key). Database failures are retried until they succeed.
 */
const { webhookAttempt } = proxyLocalActivities<WebhookActivities>({
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
