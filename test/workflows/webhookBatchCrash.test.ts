/**
 * A worker killed (SIGKILL) in the middle of a destination's delivery batch (workflows/webhookDestination.ts, one
 * `webhookAttempts` activity sending up to 20 events at once): issue 28 point 1's "worker kills lose and repeat
 * nothing".
 *
 * The contract (docs/decisions.md "Webhook delivery: a worker killed mid-batch"): delivery is at least once, the event
 * id is the dedupe key. Nothing is lost: every event reaches the receiver and its delivery log ends `delivered`.
 * Nothing is delivered twice: each event is answered 2xx once; an attempt the dead worker had seen delivered and
 * recorded is not sent again; one it had sent but not recorded (here: still waiting for its answer) is sent again
 * with the same `Service-Event-Id`, `Idempotency-Key` and `Service-Delivery-Attempt`, so a receiver that dedupes on
 * the event id counts each event exactly once.
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
/** Attempts wait 60 s for an answer: the held ones are still open when the worker dies. */
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

it('a worker killed mid-batch: every event delivered, none twice; a repeat carries the same event id and attempt', async () => {
  const org = await buildOrg();
  const configured = await t.request
    .put('/api/messaging-integration')
    .set('Authorization', bearer(org.serviceToken))
    .send({ url: receiver.url });
  expect(configured.status).toBe(201);

  const tag = randomBytes(4).toString('hex');
  const keys = Array.from({ length: 20 }, (_, i) => `batch-${tag}-${i}`);
  const ids = keys.map(eventIdFor);
  // Four events of the batch get no answer the first time (their attempts are in flight when the worker dies).
  const held = new Set([ids[5]!, ids[9]!, ids[13]!, ids[17]!]);
  for (const id of held) receiver.plan(id, ['hang', 200]);
  await recordEvents(
    org.organizationId,
    keys.map((key) => ({ type: 'task.updated' as const, data: { key }, key }))
  );

  // Every event was sent once; all but the held ones were answered 200 and recorded delivered.
  await until(
    async () => ids.filter((id) => receiver.of(id).length > 0).length,
    (n) => n === ids.length
  );
  await until(
    async () => WebhookDelivery.countDocuments({ organizationId: org.organizationId, status: 'delivered' }),
    (n) => n === ids.length - held.size
  );
  worker!.crash();
  await worker!.exited();
  const recordedBeforeKill = (
    await WebhookDelivery.find({ organizationId: org.organizationId, status: 'delivered' }).lean<WebhookDeliveryDoc[]>()
  ).map((d) => d._id);
  expect(new Set(recordedBeforeKill)).toEqual(new Set(ids.filter((id) => !held.has(id))));

  worker = await startWorker();
  for (const id of ids) await deliveryOf(id, 'delivered', 90_000);

  for (const id of ids) {
    const got = receiver.of(id);
    // Answered 2xx exactly once; every arrival names the event the same way.
    expect(got.filter((d) => d.answered !== null && d.answered >= 200 && d.answered < 300)).toHaveLength(1);
    expect(new Set(got.map((d) => d.headers['service-event-id']))).toEqual(new Set([id]));
    expect(new Set(got.map((d) => d.headers['idempotency-key']))).toEqual(new Set([id]));
    if (held.has(id)) {
      // Sent, unanswered when its worker died, sent again by the batch's retry: the same attempt.
      expect(got.map((d) => [d.answered, d.headers['service-delivery-attempt']])).toEqual([
        [null, '1'],
        [200, '1'],
      ]);
    } else {
      // Delivered and recorded before the kill: never sent again.
      expect(got.map((d) => d.headers['service-delivery-attempt'])).toEqual(['1']);
    }
    const log = await WebhookDelivery.findById(id).lean<WebhookDeliveryDoc>();
    expect(log!.attempts.map((a) => [a.attempt, a.status])).toEqual([[1, 200]]);
  }
  // A receiver deduplicating on the event id counts each event exactly once.
  const counted = new Map<string, number>();
  for (const d of receiver.received.filter((r) => r.answered === 200))
    counted.set(d.headers['service-event-id']!, (counted.get(d.headers['service-event-id']!) ?? 0) + 1);
  for (const id of ids) expect(counted.get(id)).toBe(1);
});
