/**
 * Webhook delivery tests: a real worker process that trusts the test receiver's certificate, and the wait for an
 * event's delivery log entry to reach a status.
 */
import { WebhookDelivery, type WebhookDeliveryDoc } from '../../models';
import { childTestEnv, TEST_ENCRYPTION_KEY } from './env';
import { spawnScript, type Spawned } from './processes';

/**
 * Starts `worker/index.ts` for webhook delivery to a receiver on loopback (WEBHOOK_ALLOW_PRIVATE=true, the
 * receiver's certificate trusted through NODE_EXTRA_CA_CERTS) and waits until it serves its task queue.
 * @param opts the database, the task queue, the receiver's certificate and any other variables (TEMPORAL_ADDRESS…).
 * @returns the worker process.
 */
export async function startWebhookWorker(opts: {
  mongodbUri: string;
  taskQueue: string;
  caFile: string;
  env?: Record<string, string>;
}): Promise<Spawned> {
  const worker = spawnScript(
    'worker/index.ts',
    childTestEnv({
      MONGODB_URI: opts.mongodbUri,
      TEMPORAL_TASK_QUEUE: opts.taskQueue,
      WORKFLOW_BUNDLE: process.env.AAS_WORKFLOW_BUNDLE ?? '',
      ENCRYPTION_KEY: TEST_ENCRYPTION_KEY,
      WEBHOOK_ALLOW_PRIVATE: 'true',
      NODE_EXTRA_CA_CERTS: opts.caFile,
      ...opts.env,
    })
  );
  await worker.waitFor(/worker started/, 60_000);
  return worker;
}

/**
 * @param eventId an event.
 * @param status the delivery status awaited.
 * @param timeoutMs how long to wait.
 * @returns the event's delivery log entry once it has that status.
 */
export async function deliveryOf(eventId: string, status: string, timeoutMs = 30_000): Promise<WebhookDeliveryDoc> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const doc = await WebhookDelivery.findById(eventId).lean<WebhookDeliveryDoc>();
    if (doc?.status === status) return doc;
    if (Date.now() > deadline) throw new Error(`delivery ${eventId} not ${status}: ${JSON.stringify(doc)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
