/**
 * Several hosts (issue 41; docs/decisions.md "Several hosts"): the service as it runs on separate machines, proven
 * on the multi-host bed (scripts/lib/multiHost.ts: network namespaces on a bridge, each host its own address).
 * Host *servers* runs the embedded MongoDB-compatible server and Temporal on its bridge address; *api-1* and *api-2*
 * each run a service process (HTTP + worker) pointed at *servers*; *worker-1* a worker-only process. The test
 * process is a client on the bridge, as a load balancer would be. Every process advertises its own bridge address
 * (HOST, WAKEUP_HOST), never 127.0.0.1.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { connectMongo, disconnectMongo } from '../lib/mongo';
import { setRateLimit } from '../commands/rateLimits';
import { WebhookDelivery, type WebhookDeliveryDoc } from '../models';
import { startFakeAnthropic, type FakeAnthropic } from '../scripts/fakes/anthropic';
import { startWebhookReceiver, type WebhookReceiver } from '../scripts/fakes/webhookReceiver';
import { awayFromWindowEnd } from './helpers/current';
import { childTestEnv } from './helpers/env';
import { buildOrg } from './helpers/factories';
import { bedUnavailable, createBed, type Bed } from '../scripts/lib/multiHost';
import { spawnScript, type Spawned } from './helpers/processes';
import { openSse, waitForEvent, type LiveStream, type SseEvent } from './helpers/sse';
import { until } from './helpers/until';

jest.setTimeout(180_000);

const unavailable = bedUnavailable();

/** Each service process's admission (EXECUTION_CONCURRENCY, EXECUTION_QUEUE). */
const PER_HOST = { running: 2, waiting: 2 };

if (unavailable) {
  it('the multi-host bed can be made', () => {
    throw new Error(unavailable);
  });
} else {
  describe('on several hosts', () => {
    let bed: Bed;
    let fake: FakeAnthropic;
    let receiver: WebhookReceiver;
    let worker: Spawned;
    let dataDir: string;
    let servers: Spawned;
    const started: Spawned[] = [];
    let mongoUri: string;
    let temporalAddress: string;
    const apiUrl: Record<string, string> = {};
    let token: { v1: string; service: string };

    /** The environment of a service or worker process on `host` (every address a bridge address). */
    function hostEnv(host: string, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
      const address = bed.hosts[host].address;
      return childTestEnv({
        HOST: address,
        PORT: '3000',
        APP_URL: `http://${address}:3000`,
        WAKEUP_HOST: address,
        MONGODB_URI: mongoUri,
        TEMPORAL_ADDRESS: temporalAddress,
        TEMPORAL_TASK_QUEUE: 'bed',
        ANTHROPIC_API_KEY: 'test-key',
        ANTHROPIC_BASE_URL: fake.url,
        // The webhook receiver is on the bridge (a private address) with its own certificate.
        WEBHOOK_ALLOW_PRIVATE: 'true',
        NODE_EXTRA_CA_CERTS: receiver.caFile,
        WORKFLOW_BUNDLE: process.env.AAS_WORKFLOW_BUNDLE ?? '',
        WORKSPACES_DIR: path.join(dataDir, host, 'workspaces'),
        MEDIA_DIR: path.join(dataDir, host, 'media'),
        ...extra,
      });
    }

    const service: Record<string, Spawned> = {};
    const serviceEnv: Record<string, Record<string, string>> = {};

    async function startService(host: string, extra: Record<string, string> = {}): Promise<Spawned> {
      const proc = spawnScript('worker/service.ts', hostEnv(host, extra), bed.prefix(host));
      started.push(proc);
      await proc.waitFor(/api listening/, 120_000);
      await proc.waitFor(/worker started/, 120_000);
      apiUrl[host] = `http://${bed.hosts[host].address}:3000`;
      service[host] = proc;
      serviceEnv[host] = extra;
      return proc;
    }

    /** SIGKILLs a host's service process, as a crash of that machine's process would. */
    async function crash(host: string): Promise<void> {
      service[host].crash();
      await service[host].exited();
    }

    beforeAll(async () => {
      bed = createBed(['servers', 'api-1', 'api-2', 'worker-1']);
      dataDir = mkdtempSync(path.join(os.tmpdir(), 'aas-bed-'));
      fake = await startFakeAnthropic(bed.gateway);
      receiver = await startWebhookReceiver(bed.gateway);
      servers = spawnScript('scripts/lib/bedServers.ts', childTestEnv({}), bed.prefix('servers'), [
        path.join(dataDir, 'servers'),
        bed.hosts.servers.address,
      ]);
      await servers.waitFor(/"temporal":/, 150_000);
      const addresses = JSON.parse(/\{.*"temporal".*\}/.exec(servers.output())![0]) as {
        mongo: string;
        temporal: string;
      };
      mongoUri = `${addresses.mongo}/bed`;
      temporalAddress = addresses.temporal;
      await connectMongo(addresses.mongo, { dbName: 'bed' });
      const org = await buildOrg();
      token = { v1: org.apiToken, service: org.serviceToken };
      // Readers poll the log once a minute and caches live a minute (the most the configuration allows): what a
      // test sees sooner crossed hosts by a wake-up or an invalidation. api-1 has room for a slow first workflow
      // start on a loaded machine; api-2 keeps the real request deadline, which the outage test is about.
      // Admission per host: two executions at once and two waiting (the burst test counts against the sum).
      const slow = {
        EVENT_POLL_MS: '60000',
        CACHE_TTL_MS: '60000',
        EXECUTION_CONCURRENCY: String(PER_HOST.running),
        EXECUTION_QUEUE: String(PER_HOST.waiting),
      };
      worker = spawnScript('worker/index.ts', hostEnv('worker-1', slow), bed.prefix('worker-1'));
      started.push(worker);
      await Promise.all([
        startService('api-1', { ...slow, REQUEST_DEADLINE_MS: '60000' }),
        startService('api-2', slow),
        worker.waitFor(/worker started/, 120_000),
      ]);
    });

    afterAll(async () => {
      if (process.env.BED_DEBUG) for (const p of started) process.stderr.write(p.output().slice(-6000));
      for (const p of started) p.crash();
      await Promise.all(started.map((p) => p.exited()));
      await disconnectMongo().catch(() => undefined);
      if (servers) {
        servers.child.kill('SIGTERM');
        const timer = setTimeout(() => servers.crash(), 15_000);
        await servers.exited();
        clearTimeout(timer);
      }
      await fake?.close();
      await receiver?.close();
      bed?.destroy();
      if (dataDir) rmSync(dataDir, { recursive: true, force: true });
    });

    /** A JSON request to one host. */
    async function call(
      host: string,
      method: string,
      url: string,
      options: { token?: string; body?: object; headers?: Record<string, string>; timeoutMs?: number } = {}
    ): Promise<{ status: number; headers: Headers; body: Record<string, unknown> }> {
      const res = await fetch(`${apiUrl[host]}${url}`, {
        method,
        headers: {
          authorization: `Bearer ${options.token ?? token.v1}`,
          ...(options.body ? { 'content-type': 'application/json' } : {}),
          ...options.headers,
        },
        body: options.body ? JSON.stringify(options.body) : undefined,
        signal: AbortSignal.timeout(options.timeoutMs ?? 60_000),
      });
      const text = await res.text();
      return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : {} };
    }

    async function createAgent(host: string, systemPrompt: string): Promise<{ id: string; chatId: string }> {
      const res = await call(host, 'POST', '/api/v1/agents', { body: { name: 'Bed agent', systemPrompt } });
      expect(res.status).toBe(200);
      return { id: res.body.id as string, chatId: (res.body.chatUrl as string).split('/').pop()! };
    }

    const ids = (events: SseEvent[]): number[] => events.filter((e) => e.id).map((e) => Number(e.id));
    const systemOf = (i: number): string => JSON.stringify(fake.requests[i]?.system ?? '');

    it('a chat message sent through api-1 streams live through api-2 (wake-ups cross hosts), and resumes through api-1 after Last-Event-ID', async () => {
      const agent = await createAgent('api-1', 'Be brief.');
      const events = `/api/chats/${agent.chatId}/events`;
      const auth = { authorization: `Bearer ${token.service}` };
      // api-2 polls the log once a minute here (EVENT_POLL_MS): a reply streamed in seconds came by wake-ups.
      const live = await openSse(`${apiUrl['api-2']}${events}`, { headers: auth });
      expect(live.status).toBe(200);
      const sent = await call('api-1', 'POST', `/api/chats/${agent.chatId}/messages`, {
        token: token.service,
        body: { message: '[chunks:12] [slow:40] across hosts' },
      });
      expect(sent.status).toBe(201);
      const done = (e: SseEvent): boolean => e.event === 'chat.status' && JSON.parse(e.data).status === 'done';
      await waitForEvent(live, done, 20_000);
      live.close();
      const seen = ids(live.events);
      expect(seen).toEqual(seen.map((_, i) => seen[0] + i)); // in order, no gap, no repeat
      const text = live.events
        .filter((e) => e.event === 'message.delta')
        .map((e) => JSON.parse(e.data).text as string)
        .join('');
      expect(text).toBe(Array.from({ length: 12 }, (_, i) => `tok${i + 1} `).join(''));

      const resumed = await openSse(`${apiUrl['api-1']}${events}`, {
        headers: { ...auth, 'last-event-id': String(seen[2]) },
      });
      await resumed.waitFor(seen.length - 3, 20_000);
      resumed.close();
      expect(ids(resumed.events)).toEqual(seen.slice(3));
    });

    it('an agent changed through api-2 is used by the next execution started on api-1 (cache invalidation crosses hosts)', async () => {
      // Both processes keep cached agents for CACHE_TTL_MS = 60 s here: only the invalidation can clear api-1's copy.
      const agent = await createAgent('api-1', 'PROMPT-BEFORE');
      const first = await call('api-1', 'POST', `/api/v1/agents/${agent.id}/execute`, { body: { message: 'one' } });
      expect(first.status).toBe(200);
      expect(systemOf(fake.requests.length - 1)).toContain('PROMPT-BEFORE');
      const patched = await call('api-2', 'PATCH', `/api/v1/agents/${agent.id}`, {
        body: { systemPrompt: 'PROMPT-AFTER' },
      });
      expect(patched.status).toBe(200);
      // The datagram is on its way when the PATCH answers; the bound is one network hop, far below the TTL.
      await until(
        async () => {
          const next = await call('api-1', 'POST', `/api/v1/agents/${agent.id}/execute`, { body: { message: 'two' } });
          return next.status === 200 && systemOf(fake.requests.length - 1).includes('PROMPT-AFTER');
        },
        (used) => used,
        10_000,
        100,
        'api-1 to run with the new prompt'
      );
      expect(systemOf(fake.requests.length - 1)).not.toContain('PROMPT-BEFORE');
    });

    it('the rate limit and idempotency keys are one per identity across both replicas', async () => {
      const org = await buildOrg();
      await setRateLimit(org.organizationId, org.userId, 10);
      // The twelve requests in one window of the default 60 s (a boundary between them lets an eleventh through).
      await awayFromWindowEnd(60, 15_000);
      const answers: number[] = [];
      for (let i = 0; i < 6; i++) {
        for (const host of ['api-1', 'api-2']) {
          answers.push((await call(host, 'GET', '/api/chats', { token: org.serviceToken })).status);
        }
      }
      expect(answers.filter((s) => s === 200)).toHaveLength(10);
      expect(answers.filter((s) => s === 429)).toHaveLength(2);

      const key = { 'idempotency-key': `bed-${Date.now()}` };
      const body = { name: 'Once only' };
      const made = await call('api-1', 'POST', '/api/workspaces', { token: token.service, body, headers: key });
      expect(made.status).toBe(201);
      const again = await call('api-2', 'POST', '/api/workspaces', { token: token.service, body, headers: key });
      expect(again.status).toBe(made.status);
      expect(again.body).toEqual(made.body);
    });

    /** Opens a long streamed execution on api-1 and reads a few of its events. */
    async function longExecutionOnApi1(message: string): Promise<{ executionId: string; first: LiveStream }> {
      const agent = await createAgent('api-1', 'Be brief.');
      const first = await openSse(`${apiUrl['api-1']}/api/v1/agents/${agent.id}/execute`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token.v1}` },
        body: { message, stream: true },
      });
      expect(first.status).toBe(200);
      await first.waitFor(5, 60_000);
      return { executionId: JSON.parse(first.events[0].data).executionId as string, first };
    }

    const deltas = (events: SseEvent[]): string =>
      events
        .filter((e) => e.event === 'message' && JSON.parse(e.data).messageType === 'stream_event')
        .map((e) => JSON.parse(e.data).delta.text as string)
        .join('');

    it('a burst spread over both replicas never runs more than the sum of their limits, and loses no request', async () => {
      const agent = await createAgent('api-1', 'Be brief.');
      let most = 0;
      const sampler = setInterval(() => (most = Math.max(most, fake.activeConnections)), 10);
      const burst = await Promise.all(
        Array.from({ length: 12 }, (_, i) =>
          call(i % 2 === 0 ? 'api-1' : 'api-2', 'POST', `/api/v1/agents/${agent.id}/execute`, {
            body: { message: `[chunks:10] [slow:100] burst ${i}` },
          })
        )
      );
      clearInterval(sampler);
      const hosts = 2;
      expect(most).toBeGreaterThan(0);
      expect(most).toBeLessThanOrEqual(hosts * PER_HOST.running);
      const ok = burst.filter((r) => r.status === 200);
      const refused = burst.filter((r) => r.status === 503);
      expect(ok.length + refused.length).toBe(burst.length);
      expect(ok.length).toBeGreaterThanOrEqual(hosts * (PER_HOST.running + PER_HOST.waiting));
      for (const r of refused) expect(Number(r.headers.get('retry-after'))).toBeGreaterThan(0);
      for (const r of ok) {
        const record = await call('api-2', 'GET', `/api/v1/executions/${r.body.executionId as string}`);
        expect(record.body).toMatchObject({ execution: { status: 'completed' } });
      }
    });

    it('api-1 killed mid-stream: the execution finishes on another host, and a client that reconnects to api-2 gets the rest without gaps or repeats', async () => {
      const { executionId, first } = await longExecutionOnApi1('[chunks:30] [slow:150] survive the crash');
      await crash('api-1');
      await first.ended;
      const received = first.events.filter((e) => e.id);
      const resumed = await openSse(`${apiUrl['api-2']}/api/v1/executions/${executionId}/stream`, {
        headers: { authorization: `Bearer ${token.v1}`, 'last-event-id': received.at(-1)!.id! },
      });
      expect(resumed.status).toBe(200);
      await waitForEvent(resumed, (e) => e.event === 'result', 120_000);
      resumed.close();
      const all = [...received, ...resumed.events.filter((e) => e.id)];
      const seen = ids(all);
      expect(seen).toEqual(seen.map((_, i) => seen[0] + i));
      expect(deltas(all)).toBe(Array.from({ length: 30 }, (_, i) => `tok${i + 1} `).join(''));
      const record = await call('api-2', 'GET', `/api/v1/executions/${executionId}`);
      expect(record.body).toMatchObject({ execution: { status: 'completed' } });
      await startService('api-1', serviceEnv['api-1']);
    });

    it('a cancel sent to api-2 stops the call that api-1’s successor runs', async () => {
      const { executionId, first } = await longExecutionOnApi1('[chunks:400] [slow:100] cancel me elsewhere');
      const requestsBefore = fake.requests.length;
      await crash('api-1');
      await first.ended;
      // The successor (api-2 or worker-1) calls the model again, continuing the reply.
      await until(
        async () => fake.requests.length,
        (n) => n > requestsBefore,
        60_000,
        100,
        'the successor to call the model'
      );
      const abortedBefore = fake.aborted;
      const resumed = await openSse(`${apiUrl['api-2']}/api/v1/executions/${executionId}/stream`, {
        headers: { authorization: `Bearer ${token.v1}`, 'last-event-id': first.events.filter((e) => e.id).at(-1)!.id! },
      });
      const cancelled = await call('api-2', 'POST', `/api/v1/executions/${executionId}/cancel`);
      expect(cancelled.status).toBe(200);
      await resumed.ended;
      expect(resumed.events.at(-1)).toMatchObject({
        event: 'error',
        data: JSON.stringify({ message: 'Execution cancelled' }),
      });
      await until(
        async () => fake.aborted,
        (n) => n > abortedBefore,
        30_000,
        100,
        'the model call to be aborted'
      );
      expect((await call('api-2', 'GET', `/api/v1/executions/${executionId}`)).body).toMatchObject({
        execution: { status: 'cancelled' },
      });
      await startService('api-1', serviceEnv['api-1']);
    });

    it('a webhook event produced while worker-1 dies is delivered exactly once to a receiver on its own host', async () => {
      const org = await buildOrg();
      const hook = await call('api-1', 'PUT', '/api/messaging-integration', {
        token: org.serviceToken,
        body: { url: receiver.url, event_types: ['task.created'] },
      });
      expect(hook.status).toBe(201);
      await receiver.down(); // the first attempts are refused: the event is still in delivery when worker-1 dies
      const task = await call('api-2', 'POST', '/api/v1/tasks', { token: org.apiToken, body: { title: 'Hook me' } });
      expect(task.status).toBe(200);
      const delivery = await until(
        async () =>
          WebhookDelivery.findOne({
            organizationId: org.organizationId,
            type: 'task.created',
          }).lean<WebhookDeliveryDoc>(),
        (d) => (d?.attempts.length ?? 0) > 0,
        60_000,
        100,
        'a first refused attempt'
      );
      worker.crash();
      await worker.exited();
      await receiver.up();
      await until(
        async () => (await WebhookDelivery.findById(delivery!._id).lean<WebhookDeliveryDoc>())?.status,
        (status) => status === 'delivered',
        90_000,
        250,
        'the delivery'
      );
      expect(receiver.of(delivery!._id)).toHaveLength(1);
      expect(receiver.of(delivery!._id)[0].answered).toBe(200);
    });

    it('servers unreachable from api-2: 503 with Retry-After within 5 s, and it recovers by itself', async () => {
      expect((await call('api-2', 'GET', '/api/v1/tasks')).status).toBe(200);
      bed.cut('api-2', 'servers');
      try {
        // The contract's bound: a request answers within 5 s while a dependency is down (the fetch gives up after).
        const down = await call('api-2', 'GET', '/api/v1/tasks', { timeoutMs: 5_000 });
        expect(down.status).toBe(503);
        expect(Number(down.headers.get('retry-after'))).toBeGreaterThan(0);
        // api-1 still reaches the servers.
        expect((await call('api-1', 'GET', '/api/v1/tasks')).status).toBe(200);
      } finally {
        bed.restore('api-2', 'servers');
      }
      await until(
        async () => (await call('api-2', 'GET', '/api/v1/tasks')).status,
        (status) => status === 200,
        60_000,
        250,
        'api-2 to answer again'
      );
    });
  });
}
