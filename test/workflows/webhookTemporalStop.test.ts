/**
 * Webhook delivery across a stop of the Temporal server itself. This file runs its own Temporal dev server (a
 * temporary data directory and a free port, never the server the rest of the suite shares), a real worker process
 * and a real HTTPS receiver on loopback. The receiver fails the first two attempts; while the delivery workflow waits
 * on its retry timer the server process is killed (SIGKILL, as a crash) and started again on the same SQLite file.
 * The delivery then completes once: attempts 1, 2, 3 each sent once, one success, and the delivery log says so.
 * (Deliveries are made by the organization's destination workflow `webhooks-<organizationId>`.)
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Stripe from 'stripe';
import { eventIdFor, recordEvent } from '../../commands/serviceEvents';
import { loadToolConfig } from '../../lib/config';
import { WebhookOutbox } from '../../models';
import { startWebhookReceiver, type WebhookReceiver } from '../../scripts/fakes/webhookReceiver';
import { ensureTemporalCli } from '../../scripts/servers/binaries';
import { freePort, startTemporal, type RunningServer } from '../../scripts/servers/launch';
import { destinationWorkflowId } from '../../workflows/webhookPolicy';
import { useTestApp } from '../helpers/app';
import { testConfig } from '../helpers/env';
import { bearer, buildOrg } from '../helpers/factories';
import { useTestDatabase } from '../helpers/mongo';
import { killHard, type Spawned } from '../helpers/processes';
import { until } from '../helpers/until';
import { deliveryOf, startWebhookWorker } from '../helpers/webhooks';

jest.setTimeout(120_000);

const db = useTestDatabase();
const queue = `webhook-stop-${randomBytes(4).toString('hex')}`;
const namespace = testConfig().temporalNamespace;
const stripe = new Stripe('sk_test_unused');

let receiver: WebhookReceiver;
let dataDir: string;
let bin: string;
let port: number;
let temporal: RunningServer | undefined;
let worker: Spawned | undefined;

const startServer = (): Promise<RunningServer> => startTemporal({ bin, dataDir, port, namespace });

beforeAll(async () => {
  receiver = await startWebhookReceiver();
  dataDir = mkdtempSync(path.join(os.tmpdir(), 'aas-webhook-temporal-'));
  bin = await ensureTemporalCli(loadToolConfig(), () => undefined);
  port = await freePort();
  temporal = await startServer();
}, 150_000);
// The api (over HTTP) and this process's event dispatcher use this file's Temporal server.
const app = useTestApp(() => ({
  TEMPORAL_ADDRESS: temporal!.address,
  TEMPORAL_TASK_QUEUE: queue,
  WEBHOOK_ALLOW_PRIVATE: 'true',
}));
beforeAll(async () => {
  worker = await startWebhookWorker({
    mongodbUri: db.uri,
    taskQueue: queue,
    caFile: receiver.caFile,
    env: { TEMPORAL_ADDRESS: temporal!.address },
  });
}, 150_000);

afterAll(async () => {
  worker?.crash();
  await worker?.exited();
  await temporal?.stop();
  await receiver?.close();
  rmSync(dataDir, { recursive: true, force: true });
});

it('Temporal killed while a delivery waits between attempts: after its restart the delivery completes once', async () => {
  const org = await buildOrg();
  const put = await app.request
    .put('/api/messaging-integration')
    .set('Authorization', bearer(org.serviceToken))
    .send({ url: receiver.url });
  expect(put.status).toBe(201);
  const secret = put.body.signing_secret as string;

  const key = `temporal-stop-${randomBytes(4).toString('hex')}`;
  const id = eventIdFor(key);
  receiver.plan(id, [503, 503, 200]);
  await recordEvent({ type: 'task.updated', organizationId: org.organizationId, data: { n: 1 }, key }, app!);
  await receiver.waitFor(id, 2);

  // Attempt 2 failed; the destination's workflow waits 1 s on a timer. Once the server has recorded that timer (so
  // the two attempts are in the workflow's history), the server process dies.
  const handle = app.temporal.client.workflow.getHandle(destinationWorkflowId(org.organizationId));
  // The retry timer is in the history.
  await until(
    async () => ((await handle.fetchHistory()).events ?? []).some((e) => e.timerStartedEventAttributes),
    Boolean,
    30_000
  );
  await killHard(temporal!.child.pid!);
  temporal = undefined;
  // The timer is the server's: while it is down nothing is sent, though the wait has passed.
  await new Promise((r) => setTimeout(r, 2000));
  expect(receiver.of(id)).toHaveLength(2);

  temporal = await startServer(); // the same port and SQLite file
  const doc = await deliveryOf(id, 'delivered', 60_000);
  // The destination's workflow goes on (idle until it ends by itself), without a failed workflow task.
  const events = (await handle.fetchHistory()).events ?? [];
  expect(events.filter((e) => e.workflowTaskFailedEventAttributes)).toEqual([]);

  const got = receiver.of(id);
  expect(got.map((d) => [d.headers['service-delivery-attempt'], d.answered])).toEqual([
    ['1', 503],
    ['2', 503],
    ['3', 200],
  ]);
  for (const d of got) {
    expect(d.headers['idempotency-key']).toBe(id);
    expect(stripe.webhooks.constructEvent(d.body, d.headers['service-signature']!, secret).id).toBe(id);
  }
  expect(doc).toMatchObject({ status: 'delivered', run: 1, organizationId: org.organizationId });
  expect(doc.attempts.map((a) => [a.run, a.attempt, a.status, a.error])).toEqual([
    [1, 1, 503, 'The receiver answered 503'],
    [1, 2, 503, 'The receiver answered 503'],
    [1, 3, 200, null],
  ]);
  expect(await WebhookOutbox.exists({ _id: id })).toBeNull();
  // No late duplicate: past the outbox sweep's interval, still three requests.
  await new Promise((r) => setTimeout(r, 2500));
  expect(receiver.of(id)).toHaveLength(3);
});
