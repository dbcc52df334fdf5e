/**
 * A worker killed (SIGKILL) in the middle of a destination's delivery batch (workflows/webhookDestination.ts, one
 * `webhookAttempts` activity sending up to 20 events at once): issue 28 point 1's "worker kills lose and repeat
 * nothing".
 *
 * The contract (docs/decisions.md "Webhook delivery: a worker killed mid-batch"): delivery is at least once, the event
 * id is the dedupe key. Nothing is lost: every event reaches the receiver and its delivery log ends `delivered`.
 * Nothing is delivered twice as a receiver that dedupes on the event id counts: an attempt the dead worker had seen
 * delivered and recorded is not sent again; one it had sent but not recorded (here: two still waiting for their
 * answers) is sent again with the same `Service-Event-Id`, `Idempotency-Key` and `Service-Delivery-Attempt`; the
 * delivery log holds one attempt per event.
 */
import { randomBytes } from 'node:crypto';
import { eventIdFor, recordEvents } from '../../commands/serviceEvents';
import { WebhookDelivery, type WebhookDeliveryDoc } from '../../models';
import { startWebhookReceiver, type WebhookReceiver } from '../../scripts/fakes/webhookReceiver';
import { useTestApp } from '../helpers/app';
import { bearer, buildOrg } from '../helpers/factories';
import { useTestDatabase } from '../helpers/mongo';
import type { Spawned } from '../helpers/processes';
import { until } from '../helpers/until';
import { deliveryOf, startWebhookWorker } from '../helpers/webhooks';

jest.setTimeout(150_000);

const db = useTestDatabase();
const queue = `webhook-batch-crash-${randomBytes(4).toString('hex')}`;
const t = useTestApp({ TEMPORAL_TASK_QUEUE: queue, WEBHOOK_ALLOW_PRIVATE: 'true' });

let receiver: WebhookReceiver;
let worker: Spawned | undefined;
/** Attempts wait 15 s (the most allowed) for an answer: the held ones are still open when the worker dies. */
const startWorker = (): Promise<Spawned> =>
  startWebhookWorker({
    mongodbUri: db.uri,
    taskQueue: queue,
    caFile: receiver.caFile,
    env: { WEBHOOK_TIMEOUT_MS: '15000' },
  });

beforeAll(async () => {
  receiver = await startWebhookReceiver();
  worker = await startWorker();
}, 90_000);

afterAll(async () => {
  worker?.crash();
  await receiver?.close();
});

it('a worker killed mid-batch: every event delivered; what it recorded is not sent again; repeats carry the same ids', async () => {
  const org = await buildOrg();
  const configured = await t.request
    .put('/api/messaging-integration')
    .set('Authorization', bearer(org.serviceToken))
    .send({ url: receiver.url });
  expect(configured.status).toBe(201);

  const tag = randomBytes(4).toString('hex');
  const keys = Array.from({ length: 20 }, (_, i) => `batch-${tag}-${i}`);
  const ids = keys.map(eventIdFor);
  // Two events get no answer the first time (their attempts are in flight when the worker dies). Adjacent, so they
  // hold at most two of the destination's three batch slots: the other events are never queued behind them.
  const held = new Set([ids[10]!, ids[11]!]);
  for (const id of held) receiver.plan(id, ['hang', 200]);
  await recordEvents(
    org.organizationId,
    keys.map((key) => ({ type: 'task.updated' as const, data: { key }, key })),
    t
  );

  // Every event was sent once and answers are being recorded: the worker dies now, with the held attempts still
  // waiting for their answers (up to WEBHOOK_TIMEOUT_MS).
  await until(
    async () => ids.filter((id) => receiver.of(id).length > 0).length,
    (n) => n === ids.length,
    60_000,
    20
  );
  await until(
    async () => WebhookDelivery.countDocuments({ organizationId: org.organizationId, status: 'delivered' }),
    (n) => n > 0,
    60_000,
    20
  );
  worker!.crash();
  await worker!.exited();
  const recordedBeforeKill = new Set(
    (
      await WebhookDelivery.find({ organizationId: org.organizationId, status: 'delivered' }).lean<
        WebhookDeliveryDoc[]
      >()
    ).map((d) => d._id)
  );
  expect(recordedBeforeKill.size).toBeGreaterThan(0);
  for (const id of held) expect(recordedBeforeKill.has(id)).toBe(false);

  worker = await startWorker();
  for (const id of ids) await deliveryOf(id, 'delivered', 90_000);

  for (const id of ids) {
    const got = receiver.of(id);
    // Every arrival names the event the same way, as the same attempt (a batch is sent again as it was).
    expect(new Set(got.map((d) => d.headers['service-event-id']))).toEqual(new Set([id]));
    expect(new Set(got.map((d) => d.headers['idempotency-key']))).toEqual(new Set([id]));
    expect(new Set(got.map((d) => d.headers['service-delivery-attempt']))).toEqual(new Set(['1']));
    if (held.has(id)) {
      // Sent, unanswered when its worker died, sent again by the batch's retry.
      expect(got.map((d) => d.answered)).toEqual([null, 200]);
    } else if (recordedBeforeKill.has(id)) {
      // Delivered and recorded before the kill: never sent again.
      expect(got.map((d) => d.answered)).toEqual([200]);
    } else {
      // Answered but not yet recorded when the worker died: possibly sent again (at least once).
      expect(got.length).toBeLessThanOrEqual(2);
      expect(got.every((d) => d.answered === 200)).toBe(true);
    }
    const log = await WebhookDelivery.findById(id).lean<WebhookDeliveryDoc>();
    expect(log!.status).toBe('delivered');
    expect(log!.attempts.map((a) => [a.attempt, a.status])).toEqual([[1, 200]]);
  }
});
