/**
 * Webhook delivery end to end: the api configures the destination, events recorded by the service start their
 * delivery workflows, and a real worker process (trusting the receiver's self-signed certificate through
 * NODE_EXTRA_CA_CERTS, WEBHOOK_ALLOW_PRIVATE=true for loopback) POSTs them to a real HTTPS receiver on loopback.
 * Signatures are checked with Stripe's verifier (an independent oracle) and with the spec's rule.
 */
import { randomBytes } from 'node:crypto';
import Stripe from 'stripe';
import { eventIdFor, recordEvent } from '../../../commands/serviceEvents';
import { createTemporal } from '../../../lib/temporal';
import { webhookDispatcher } from '../../../commands/webhooks';
import { webhookOperations } from '../../../api/current/webhookEvents.schema';
import { checkResponse, type Schema } from '../../../lib/ajv';
import { verifySignature } from '../../../lib/webhookSignature';
import { WebhookDelivery, WebhookIntegration, WebhookOutbox } from '../../../models';
import { WEBHOOK_POLICY } from '../../../workflows/webhookPolicy';
import { memoryOf } from '../../../scripts/lib/proc';
import { createTestApp, useTestApp } from '../../helpers/app';
import { testLogger } from '../../helpers/env';
import { bearer, buildOrg } from '../../helpers/factories';
import { useTestDatabase } from '../../helpers/mongo';
import type { Spawned } from '../../helpers/processes';
import { deliveryOf, startWebhookWorker } from '../../helpers/webhooks';
import {
  startWebhookReceiver,
  type ReceivedDelivery,
  type WebhookReceiver,
} from '../../../scripts/fakes/webhookReceiver';

const db = useTestDatabase();
const queue = `webhooks-${randomBytes(4).toString('hex')}`;
const t = useTestApp({ TEMPORAL_TASK_QUEUE: queue, WEBHOOK_ALLOW_PRIVATE: 'true' });
const stripe = new Stripe('sk_test_unused');

let receiver: WebhookReceiver;
let worker: Spawned | undefined;
/** The worker's WEBHOOK_TIMEOUT_MS: lowered from the default 10 s (test/lib/config.test.ts) to keep the file quick. */
const ATTEMPT_TIMEOUT_MS = 3000;
/**
 * The worker's WEBHOOK_RETRY_FOR: 7 s, the spec's 0 s + 1 s + 2 s + 4 s and no long tail, so that this file sees a
 * delivery fail after its fifth attempt (the long tail: test/workflows/webhookLongTail.test.ts).
 */
const RETRY_FOR = '7s';

const startWorker = (): Promise<Spawned> =>
  startWebhookWorker({
    mongodbUri: db.uri,
    taskQueue: queue,
    caFile: receiver.caFile,
    env: { WEBHOOK_TIMEOUT_MS: String(ATTEMPT_TIMEOUT_MS), WEBHOOK_RETRY_FOR: RETRY_FOR },
  });

beforeAll(async () => {
  receiver = await startWebhookReceiver();
  worker = await startWorker();
}, 90_000);

afterAll(async () => {
  worker?.crash();
  await receiver?.close();
});

/** An organization whose destination is the receiver; returns its ids, token and clear secret. */
async function configuredOrg(extra: Record<string, unknown> = {}) {
  const org = await buildOrg();
  const res = await t.request
    .put('/api/messaging-integration')
    .set('Authorization', bearer(org.serviceToken))
    .send({ url: receiver.url, ...extra });
  expect(res.status).toBe(201);
  return { ...org, secret: res.body.signing_secret as string };
}

function expectSigned(d: ReceivedDelivery, secret: string): void {
  const event = stripe.webhooks.constructEvent(d.body, d.headers['service-signature']!, secret);
  expect(event.id).toBe(d.headers['service-event-id']);
  expect(verifySignature(d.headers['service-signature']!, secret, d.body)).toBe(true);
}

describe('configuration', () => {
  it('creates the secret on the first PUT, shows it once, stores it encrypted; reads never show it', async () => {
    const org = await buildOrg();
    const auth = bearer(org.serviceToken);
    // Before any PUT: 200 with the unconfigured state (no destination, delivery disabled, no secret).
    const unconfigured = await t.request.get('/api/messaging-integration').set('Authorization', auth);
    expect({ status: unconfigured.status, body: unconfigured.body }).toEqual({
      status: 200,
      body: {
        integration: {
          url: null,
          enabled: false,
          event_types: null,
          signing_secrets: [],
          disabled: null,
          created_at: null,
          updated_at: null,
        },
      },
    });
    const first = await t.request
      .put('/api/messaging-integration')
      .set('Authorization', auth)
      .send({ url: receiver.url });
    expect(first.status).toBe(201);
    expect(first.body.signing_secret).toMatch(/^whsec_[A-Za-z0-9]{40}$/);
    const stored = JSON.stringify(await WebhookIntegration.findById(org.organizationId).lean());
    expect(stored).not.toContain(first.body.signing_secret);
    const again = await t.request
      .put('/api/messaging-integration')
      .set('Authorization', auth)
      .send({ url: receiver.url, enabled: false, event_types: ['task.created'] });
    expect(again.status).toBe(200);
    expect(again.body.signing_secret).toBeUndefined();
    const read = await t.request.get('/api/messaging-integration').set('Authorization', auth);
    expect(read.status).toBe(200);
    expect(read.body.integration).toMatchObject({ url: receiver.url, enabled: false, event_types: ['task.created'] });
    expect(JSON.stringify(read.body)).not.toContain('whsec_');
  });

  it('refuses http, credentials, unknown event types and an over-long grace period with 400', async () => {
    const org = await buildOrg();
    const auth = bearer(org.serviceToken);
    for (const body of [
      { url: 'http://example.com/hook' },
      { url: 'https://user:pw@example.com/hook' },
      { url: receiver.url, event_types: ['nope'] },
    ]) {
      const res = await t.request.put('/api/messaging-integration').set('Authorization', auth).send(body);
      expect([res.status, res.body.error?.code]).toEqual([400, 'validation_failed']);
    }
    await t.request.put('/api/messaging-integration').set('Authorization', auth).send({ url: receiver.url });
    const rotate = await t.request
      .post('/api/messaging-integration/signing-secret/rotate')
      .set('Authorization', auth)
      .send({ grace_period_seconds: 86_401 });
    expect(rotate.status).toBe(400);
  });

  it('refuses a private destination unless WEBHOOK_ALLOW_PRIVATE=true', async () => {
    const strict = createTestApp({ TEMPORAL_TASK_QUEUE: queue });
    try {
      const org = await buildOrg();
      for (const url of ['https://127.0.0.1:8443/hook', 'https://[::1]/hook', 'https://169.254.169.254/latest']) {
        const res = await strict.request
          .put('/api/messaging-integration')
          .set('Authorization', bearer(org.serviceToken))
          .send({ url });
        expect([url, res.status]).toEqual([url, 400]);
      }
    } finally {
      await strict.close();
    }
  });
});

describe('delivery', () => {
  it('delivers a task created through the API with the six headers, signed so Stripe’s verifier accepts it', async () => {
    const org = await configuredOrg();
    const created = await t.request
      .post('/api/v1/tasks')
      .set('Authorization', bearer(org.apiToken))
      .send({ title: 'Webhook me' });
    expect(created.status).toBe(200);
    const deadline = Date.now() + 30_000;
    let mine: ReceivedDelivery | undefined;
    while (!mine && Date.now() < deadline) {
      mine = receiver.received.find((r) => JSON.parse(r.body).organizationId === org.organizationId);
      if (!mine) await new Promise((r) => setTimeout(r, 50));
    }
    expect(mine).toBeDefined();
    const d = mine!;
    const body = JSON.parse(d.body);
    expect(body).toEqual({
      id: expect.stringMatching(/^evt_/),
      type: 'task.created',
      createdAt: expect.any(String),
      organizationId: org.organizationId,
      data: { task: expect.objectContaining({ title: 'Webhook me', status: 'pending' }) },
    });
    // The body is the one the OpenAPI document's `webhooks` entry describes.
    const documented = (webhookOperations()['task.created'] as { post: { requestBody: { content: never } } }).post
      .requestBody.content['application/json'] as { schema: Schema };
    expect(checkResponse(documented.schema, body)).toBeUndefined();
    expect(d.headers['service-event-id']).toBe(body.id);
    expect(d.headers['service-event-type']).toBe('task.created');
    expect(d.headers['service-delivery-attempt']).toBe('1');
    expect(d.headers['service-timestamp']).toMatch(/^\d{10}$/);
    expect(d.headers['service-signature']).toBe(
      `t=${d.headers['service-timestamp']},v1=${d.headers['service-signature']!.split('v1=')[1]}`
    );
    expect(d.headers['idempotency-key']).toBe(body.id);
    expect(d.headers['content-type']).toBe('application/json');
    expectSigned(d, org.secret);
    expect(() => stripe.webhooks.constructEvent(d.body, d.headers['service-signature']!, 'whsec_wrong')).toThrow();
    expect(() => stripe.webhooks.constructEvent(`${d.body} `, d.headers['service-signature']!, org.secret)).toThrow();
    const doc = await deliveryOf(body.id, 'delivered');
    expect(doc.attempts).toHaveLength(1);
    expect(doc.attempts[0]!.response).toBe('ok'); // the receiver's answer
  });

  it('an agent execution delivers chat.status_changed (working, done) and execution.completed', async () => {
    const org = await configuredOrg();
    const v1 = (p: string, body: object) =>
      t.request.post(`/api/v1${p}`).set('Authorization', bearer(org.apiToken)).send(body);
    const agent = await v1('/agents', { name: 'Hooked', systemPrompt: 'Be brief.' });
    expect(agent.status).toBe(200);
    const exec = await v1(`/agents/${agent.body.id}/execute`, { message: 'hello' });
    expect(exec.status).toBe(200);
    const mine = async (type: string): Promise<Array<{ data: Record<string, unknown> }>> => {
      const deadline = Date.now() + 30_000;
      for (;;) {
        const found = receiver.received
          .map((r) => JSON.parse(r.body) as { type: string; organizationId: string; data: Record<string, unknown> })
          .filter((b) => b.organizationId === org.organizationId && b.type === type);
        if (found.length > 0 || Date.now() > deadline) return found;
        await new Promise((r) => setTimeout(r, 50));
      }
    };
    const [completed] = await mine('execution.completed');
    expect(completed?.data).toMatchObject({ executionId: exec.body.executionId, status: 'completed' });
    const statuses = async () => (await mine('chat.status_changed')).map((b) => b.data.status).sort();
    const deadline = Date.now() + 30_000;
    while ((await statuses()).length < 2 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    expect(await statuses()).toEqual(['done', 'working']);
  });

  it('retries transient failures after 0 s, 1 s, 2 s and 4 s, then marks the delivery failed', async () => {
    const org = await configuredOrg();
    const key = `retry-${randomBytes(4).toString('hex')}`;
    const id = eventIdFor(key);
    receiver.plan(id, [503, 500, 429, 408, 502]);
    await recordEvent({ type: 'task.updated', organizationId: org.organizationId, data: { n: 1 }, key }, t);
    const got = await receiver.waitFor(id, 5, 40_000);
    expect(got.map((d) => d.headers['service-delivery-attempt'])).toEqual(['1', '2', '3', '4', '5']);
    const gaps = got.slice(1).map((d, i) => d.at - got[i]!.at);
    // Lower bounds only (the timers guarantee them): 0 s, 1 s, 2 s, 4 s.
    expect(gaps[1]).toBeGreaterThanOrEqual(950);
    expect(gaps[2]).toBeGreaterThanOrEqual(1950);
    expect(gaps[3]).toBeGreaterThanOrEqual(3950);
    // A new timestamp (and signature) per attempt, every one valid.
    for (const d of got) expectSigned(d, org.secret);
    const doc = await deliveryOf(id, 'failed');
    expect(doc.attempts.map((a) => [a.attempt, a.status])).toEqual([
      [1, 503],
      [2, 500],
      [3, 429],
      [4, 408],
      [5, 502],
    ]);
    await new Promise((r) => setTimeout(r, 500));
    expect(receiver.of(id)).toHaveLength(5);
  }, 60_000);

  it('a receiver that never answers: each attempt ends at WEBHOOK_TIMEOUT_MS and is retried on the schedule', async () => {
    const org = await configuredOrg();
    const key = `hang-${randomBytes(4).toString('hex')}`;
    const id = eventIdFor(key);
    receiver.plan(id, ['hang', 'hang', 200]);
    await recordEvent({ type: 'task.updated', organizationId: org.organizationId, data: {}, key }, t);
    const got = await receiver.waitFor(id, 3, 40_000);
    expect(got.map((d) => d.headers['service-delivery-attempt'])).toEqual(['1', '2', '3']);
    // Lower bounds only: each wait (0 s, then 1 s) starts when the attempt before it gave up.
    const gaps = got.slice(1).map((d, i) => d.at - got[i]!.at);
    expect(gaps[0]).toBeGreaterThanOrEqual(ATTEMPT_TIMEOUT_MS - 100);
    expect(gaps[1]).toBeGreaterThanOrEqual(ATTEMPT_TIMEOUT_MS + 900);
    const timedOut = [null, `No answer within ${ATTEMPT_TIMEOUT_MS} ms`, null];
    const doc = await deliveryOf(id, 'delivered');
    expect(doc.attempts.map((a) => [a.attempt, a.status, a.error, a.response])).toEqual([
      [1, ...timedOut],
      [2, ...timedOut],
      [3, 200, null, 'ok'],
    ]);
    for (const a of doc.attempts.slice(0, 2)) expect(a.latencyMs).toBeGreaterThanOrEqual(ATTEMPT_TIMEOUT_MS);
  }, 60_000);

  it('reads at most 64 KiB of an answer: a 64 MiB one and an endless one end their attempt; the log keeps 1 KiB', async () => {
    const org = await configuredOrg();
    const peakBefore = memoryOf(worker!.child.pid).peakKib!;
    for (const body of [64 * 1024 * 1024, 'endless'] as const) {
      const key = `large-${randomBytes(4).toString('hex')}`;
      const id = eventIdFor(key);
      receiver.plan(id, [{ status: 200, body }]);
      await recordEvent({ type: 'task.updated', organizationId: org.organizationId, data: {}, key }, t);
      // Delivered at the first attempt: reading stopped at the cap (an endless answer read whole would time out).
      const doc = await deliveryOf(id, 'delivered');
      expect([body, doc.attempts.map((a) => [a.attempt, a.status, a.error])]).toEqual([body, [[1, 200, null]]]);
      expect(doc.attempts[0]!.response).toBe('x'.repeat(WEBHOOK_POLICY.logResponseBytes));
      // The worker hung up before the receiver could hand it the whole answer.
      expect(receiver.of(id).map((d) => d.answerComplete)).toEqual([false]);
    }
    // Nothing of those answers was held: the worker's peak resident memory grew by far less than one of them.
    expect(memoryOf(worker!.child.pid).peakKib! - peakBefore).toBeLessThan(32 * 1024);
  });

  it('succeeds on a later attempt and honours Retry-After', async () => {
    const org = await configuredOrg();
    const key = `later-${randomBytes(4).toString('hex')}`;
    const id = eventIdFor(key);
    receiver.plan(id, [{ status: 503, headers: { 'Retry-After': '2' } }, 200]);
    await recordEvent({ type: 'task.updated', organizationId: org.organizationId, data: {}, key }, t);
    const got = await receiver.waitFor(id, 2);
    expect(got[1]!.at - got[0]!.at).toBeGreaterThanOrEqual(1950); // the schedule said 0 s; the receiver said 2 s
    const doc = await deliveryOf(id, 'delivered');
    expect(doc.attempts.map((a) => a.status)).toEqual([503, 200]);
  });

  it('treats other 4xx and 3xx as permanent: one attempt, no redirect followed', async () => {
    const org = await configuredOrg();
    for (const answer of [{ status: 400 }, { status: 302, headers: { Location: `${receiver.url}/elsewhere` } }]) {
      const key = `perm-${randomBytes(4).toString('hex')}`;
      const id = eventIdFor(key);
      receiver.plan(id, [answer]);
      await recordEvent({ type: 'task.updated', organizationId: org.organizationId, data: {}, key }, t);
      await deliveryOf(id, 'failed');
      await new Promise((r) => setTimeout(r, 1500));
      expect(receiver.of(id)).toHaveLength(1);
    }
  });

  it('rotation without grace signs with the new secret only; with grace, with both', async () => {
    const org = await configuredOrg();
    const auth = bearer(org.serviceToken);
    const rotated = await t.request.post('/api/messaging-integration/signing-secret/rotate').set('Authorization', auth);
    expect(rotated.status).toBe(200);
    const second = rotated.body.signing_secret as string;
    expect(second).not.toBe(org.secret);
    const k1 = `rot1-${randomBytes(4).toString('hex')}`;
    await recordEvent({ type: 'task.updated', organizationId: org.organizationId, data: {}, key: k1 }, t);
    const [d1] = await receiver.waitFor(eventIdFor(k1), 1);
    expectSigned(d1!, second);
    expect(() => stripe.webhooks.constructEvent(d1!.body, d1!.headers['service-signature']!, org.secret)).toThrow();
    expect(d1!.headers['service-signature']!.match(/v1=/g)).toHaveLength(1);

    const graced = await t.request
      .post('/api/messaging-integration/signing-secret/rotate')
      .set('Authorization', auth)
      .send({ grace_period_seconds: 3600 });
    expect(graced.status).toBe(200);
    const third = graced.body.signing_secret as string;
    expect(graced.body.integration.signing_secrets).toHaveLength(2);
    const k2 = `rot2-${randomBytes(4).toString('hex')}`;
    await recordEvent({ type: 'task.updated', organizationId: org.organizationId, data: {}, key: k2 }, t);
    const [d2] = await receiver.waitFor(eventIdFor(k2), 1);
    expect(d2!.headers['service-signature']!.match(/v1=/g)).toHaveLength(2);
    expectSigned(d2!, third);
    expectSigned(d2!, second);
    expect(() => stripe.webhooks.constructEvent(d2!.body, d2!.headers['service-signature']!, org.secret)).toThrow();
  });

  it('a duplicate emit is a no-op: one delivery per event id', async () => {
    const org = await configuredOrg();
    const key = `dup-${randomBytes(4).toString('hex')}`;
    const results = await Promise.all(
      Array.from({ length: 5 }, () =>
        recordEvent({ type: 'task.updated', organizationId: org.organizationId, data: {}, key }, t)
      )
    );
    expect(results.filter((r) => r.created)).toHaveLength(1);
    await deliveryOf(eventIdFor(key), 'delivered');
    await new Promise((r) => setTimeout(r, 2500)); // past the outbox sweep's interval
    expect(receiver.of(eventIdFor(key))).toHaveLength(1);
  });

  it('filters by event type and skips a disabled destination', async () => {
    const org = await configuredOrg({ event_types: ['task.completed'] });
    const k1 = `skip-${randomBytes(4).toString('hex')}`;
    await recordEvent({ type: 'task.updated', organizationId: org.organizationId, data: {}, key: k1 }, t);
    const k2 = `want-${randomBytes(4).toString('hex')}`;
    await recordEvent({ type: 'task.completed', organizationId: org.organizationId, data: {}, key: k2 }, t);
    await receiver.waitFor(eventIdFor(k2), 1);
    await new Promise((r) => setTimeout(r, 1000));
    expect(receiver.of(eventIdFor(k1))).toHaveLength(0);
    expect(await WebhookOutbox.exists({ _id: eventIdFor(k1) })).toBeNull();
  });

  it('an event recorded while Temporal does not answer is delivered later by the worker’s outbox sweep', async () => {
    const org = await configuredOrg();
    const key = `outbox-${randomBytes(4).toString('hex')}`;
    // This process's dispatcher talks to a Temporal that does not answer (nothing listens there): the start fails.
    const down = createTemporal({
      temporalAddress: '127.0.0.1:9',
      temporalNamespace: 'default',
      temporalTaskQueue: queue,
      dependencyTimeoutMs: 500,
    });
    try {
      const { created } = await recordEvent(
        { type: 'task.updated', organizationId: org.organizationId, data: {}, key },
        { dispatchEvent: webhookDispatcher(down, testLogger()) }
      );
      expect(created).toBe(true); // the state change is recorded all the same
    } finally {
      await down.connection.close().catch(() => undefined);
    }
    expect(receiver.of(eventIdFor(key))).toHaveLength(0);
    expect(await WebhookOutbox.exists({ _id: eventIdFor(key) })).not.toBeNull();
    const [d] = await receiver.waitFor(eventIdFor(key), 1);
    expectSigned(d!, org.secret);
    await deliveryOf(eventIdFor(key), 'delivered');
    expect(await WebhookOutbox.exists({ _id: eventIdFor(key) })).toBeNull();
  });

  it('test delivery, the delivery log and redelivery', async () => {
    const org = await configuredOrg();
    const auth = bearer(org.serviceToken);
    const test = await t.request.post('/api/messaging-integration/test').set('Authorization', auth);
    expect(test.status).toBe(200);
    expect(test.body.result).toMatchObject({ delivered: true, status: 200, error: null });
    const [td] = await receiver.waitFor(test.body.result.event_id, 1);
    expect(td!.headers['service-event-type']).toBe('test');
    expectSigned(td!, org.secret);

    const key = `log-${randomBytes(4).toString('hex')}`;
    const id = eventIdFor(key);
    receiver.plan(id, [400]);
    await recordEvent({ type: 'task.updated', organizationId: org.organizationId, data: {}, key }, t);
    await deliveryOf(id, 'failed');
    const log = await t.request.get('/api/messaging-integration/deliveries').set('Authorization', auth);
    expect(log.status).toBe(200);
    expect(log.body.deliveries[0]).toMatchObject({
      event_id: id,
      status: 'failed',
      run: 1,
      attempts: [{ run: 1, attempt: 1, status: 400, error: 'The receiver answered 400', response: 'ok' }],
    });
    const again = await t.request
      .post(`/api/messaging-integration/deliveries/${id}/redeliver`)
      .set('Authorization', auth);
    expect(again.status).toBe(202);
    expect(again.body).toEqual({ event_id: id, run: 2 });
    await deliveryOf(id, 'delivered');
    const got = receiver.of(id);
    expect(got.map((d) => [d.headers['service-delivery-attempt'], d.answered])).toEqual([
      ['1', 400],
      ['1', 200],
    ]);
    const other = await buildOrg();
    const foreign = await t.request
      .post(`/api/messaging-integration/deliveries/${id}/redeliver`)
      .set('Authorization', bearer(other.serviceToken));
    expect(foreign.status).toBe(404);
  });
});

describe('a worker killed between two attempts', () => {
  it('completes the delivery after restart, nothing lost or repeated', async () => {
    const org = await configuredOrg();
    const key = `crash-${randomBytes(4).toString('hex')}`;
    const id = eventIdFor(key);
    // Attempts 1-3 fail; attempt 3 is followed by a 2 s wait, during which the worker dies.
    receiver.plan(id, [503, 503, 503, 200]);
    await recordEvent({ type: 'task.updated', organizationId: org.organizationId, data: {}, key }, t);
    await receiver.waitFor(id, 3);
    for (let i = 0; i < 200 && ((await WebhookDelivery.findById(id).lean())?.attempts.length ?? 0) < 3; i++)
      await new Promise((r) => setTimeout(r, 20));
    worker!.crash();
    await worker!.exited();
    worker = await startWorker();
    await deliveryOf(id, 'delivered', 60_000);
    const got = receiver.of(id);
    // Attempt 4 after restart; an attempt the dead worker had sent but not yet reported may be sent again under its
    // own number (receivers dedupe on Idempotency-Key): numbers never go back, none is skipped, one success.
    const numbers = got.map((d) => Number(d.headers['service-delivery-attempt']));
    expect(numbers.slice(0, 3)).toEqual([1, 2, 3]);
    expect([...numbers].sort()).toEqual(numbers);
    expect(new Set(numbers)).toEqual(new Set([1, 2, 3, 4].slice(0, new Set(numbers).size)));
    expect(got.filter((d) => d.answered === 200)).toHaveLength(1);
    expect(got.at(-1)!.answered).toBe(200);
    expect(new Set(got.map((d) => d.headers['idempotency-key']))).toEqual(new Set([id]));
    for (const d of got) expectSigned(d, org.secret);
  }, 120_000);
});
