/**
 * Admission of executions (docs/decisions.md "Overload: admission of executions (issue 24 point 5)"), over real HTTP
 * with the real Temporal server and the worker in this process (a service process, eager starts): at
 * EXECUTION_CONCURRENCY=2 further execute requests wait in line and run in the order they came, the excess past
 * EXECUTION_QUEUE (or past EXECUTION_QUEUE_WAIT_MS) is answered 503 with Retry-After in the surface's error shape,
 * and no slot is lost to a cancel, a failed execution or a client that left the line. A `[hang]` reply holds its
 * slot until it is cancelled. No time is measured: order is read from the records (an execution admitted after
 * another's slot came back was created after that one completed).
 */
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import { Execution, type ExecutionDoc } from '../../../models';
import { executionsAdmitted, executionsRefused, executionsWaiting } from '../../../lib/metrics';
import { createTestApp, type TestApp } from '../../helpers/app';
import { childTestEnv } from '../../helpers/env';
import { spawnScript, type Spawned } from '../../helpers/processes';
import { bearer, buildOrg } from '../../helpers/factories';
import { useTestDatabase } from '../../helpers/mongo';
import { openSse, type LiveStream } from '../../helpers/sse';
import { until } from '../../helpers/until';
import { v1As, v1Error } from '../../helpers/v1';
import { useExecutionStack } from '../../helpers/worker';
import { currentAs, currentError } from '../../helpers/current';

const db = useTestDatabase();
const stack = useExecutionStack('admission', { EXECUTION_CONCURRENCY: '2', EXECUTION_QUEUE: '3' }, { service: true });

const AT_CAPACITY = 'The service is at capacity. Please retry later.';

const admitted = async (): Promise<number> => (await executionsAdmitted.get()).values[0]?.value ?? 0;
const waiting = async (): Promise<number> => (await executionsWaiting.get()).values[0]?.value ?? 0;
const refused = async (reason: string): Promise<number> =>
  (await executionsRefused.get()).values.find((v) => v.labels.reason === reason)?.value ?? 0;

/** Waits until the admission gauges read the given values. */
async function gaugesAre(wantAdmitted: number, wantWaiting: number): Promise<void> {
  await until(
    async () => [await admitted(), await waiting()],
    ([a, w]) => a === wantAdmitted && w === wantWaiting,
    30_000,
    20
  );
}

async function setup() {
  const org = await buildOrg();
  const as = v1As(stack.t, org.apiToken);
  const agent = await as.post('/agents', { name: 'Admitted', systemPrompt: 'p' });
  expect(agent.status).toBe(200);
  return { org, token: org.apiToken, agentId: agent.body.id as string, as };
}

/**
 * Starts a streamed execution whose reply never ends (until cancelled): it holds a slot.
 * @returns its id and stream.
 */
async function hold(base: string, token: string, agentId: string): Promise<{ id: string; live: LiveStream }> {
  const live = await openSse(`${base}/api/v1/agents/${agentId}/execute`, {
    method: 'POST',
    headers: { authorization: bearer(token) },
    body: { message: '[hang]', stream: true },
  });
  expect(live.status).toBe(200);
  await live.waitFor(1);
  expect(live.events[0].event).toBe('meta');
  return { id: JSON.parse(live.events[0].data).executionId as string, live };
}

/** Cancels a held execution and waits for its stream to end. */
async function cancel(as: ReturnType<typeof v1As>, held: { id: string; live: LiveStream }): Promise<void> {
  const res = await as.post(`/executions/${held.id}/cancel`);
  expect(res.status).toBe(200);
  await held.live.ended;
}

it('at its bound, requests wait in line and run in order; past the line, 503 with Retry-After; no slot is lost', async () => {
  const { org, token, agentId, as } = await setup();
  const a = await hold(stack.base, token, agentId);
  const b = await hold(stack.base, token, agentId);
  await gaugesAre(2, 0);

  // Three JSON executes wait in line, each joining after the one before it.
  const queued: Array<Promise<{ status: number; body: { executionId: string; result: string } }>> = [];
  for (const n of [1, 2, 3]) {
    queued.push(as.post(`/agents/${agentId}/execute`, { message: `[chunks:${n}] w${n}` }).then((r) => r));
    await gaugesAre(2, n);
  }

  // The line is full: refused at once, on both surfaces, in each one's error shape.
  const fullBefore = await refused('queue_full');
  const v1 = await as.post(`/agents/${agentId}/execute`, { message: 'w4' });
  expect(v1.status).toBe(503);
  expect(v1.headers['retry-after']).toMatch(/^[1-9][0-9]*$/);
  expect(v1.body).toEqual(v1Error(503, 'Service Unavailable', AT_CAPACITY));
  const client = await stack.t.request
    .post('/api/agent/execute')
    .set('Authorization', bearer(token))
    .send({ characterId: agentId, message: 'w5' });
  expect(client.status).toBe(503);
  expect(client.headers['retry-after']).toMatch(/^[1-9][0-9]*$/);
  expect(client.body).toEqual(currentError('service_unavailable', AT_CAPACITY));
  expect(await refused('queue_full')).toBe(fullBefore + 2);
  // Nothing was recorded for the refused ones: only a and b exist.
  expect(await Execution.countDocuments({ organizationId: org.organizationId })).toBe(2);

  // One slot comes back: the three run one after the other, in the order they came (b still holds the other).
  await cancel(as, a);
  const done = await Promise.all(queued);
  expect(done.map((r) => [r.status, r.body.result])).toEqual([
    [200, 'tok1 '],
    [200, 'tok1 tok2 '],
    [200, 'tok1 tok2 tok3 '],
  ]);
  const records = await Promise.all(
    done.map((r) => Execution.findById(r.body.executionId).lean<ExecutionDoc>().orFail())
  );
  for (let i = 1; i < records.length; i++)
    expect(records[i].createdAt.getTime()).toBeGreaterThanOrEqual(records[i - 1].completedAt!.getTime());

  // Both slots come back: exactly two are admitted again, a third request waits, and runs once they end.
  await cancel(as, b);
  await gaugesAre(0, 0);
  const c = await hold(stack.base, token, agentId);
  const d = await hold(stack.base, token, agentId);
  const after = as.post(`/agents/${agentId}/execute`, { message: '[chunks:2] after' }).then((r) => r);
  await gaugesAre(2, 1);
  await cancel(as, c);
  await cancel(as, d);
  const res = await after;
  expect(res.status).toBe(200);
  expect(res.body.result).toBe('tok1 tok2 ');
  await gaugesAre(0, 0);
}, 120_000);

it('a failed execution, a chat message and a client that left the line give their slots back', async () => {
  const { org, token, agentId, as } = await setup();
  // A failed execution (the provider refuses it) ran and ended: its slot is back.
  const failed = await as.post(`/agents/${agentId}/execute`, { message: '[fail:400] no' });
  expect(failed.status).toBe(500);
  await gaugesAre(0, 0);

  const a = await hold(stack.base, token, agentId);
  // A chat message's request is answered at once; its execution holds a slot until it ends.
  const api = currentAs(stack.t, org.serviceToken);
  const chatAgent = await api.post('/agents', { name: 'Chat', system_prompt: 'p' });
  const ws = await api.post('/workspaces', { name: 'W' });
  const chat = await api.post('/chats', { agent_id: chatAgent.body.agent.id, workspace_id: ws.body.workspace.id });
  const sent = await api.post(`/chats/${chat.body.chat.id}/messages`, { message: '[hang]' });
  expect(sent.status).toBe(201);
  await gaugesAre(2, 0);

  // A client joins the line and goes away: it leaves the line, and nothing is started for it.
  const url = new URL(`${stack.base}/api/v1/agents/${agentId}/execute`);
  const body = JSON.stringify({ message: 'gone' });
  const req = http.request(url, {
    method: 'POST',
    headers: {
      authorization: bearer(token),
      'content-type': 'application/json',
      'content-length': String(Buffer.byteLength(body)),
    },
  });
  req.on('error', () => undefined);
  req.end(body);
  await gaugesAre(2, 1);
  req.destroy();
  await gaugesAre(2, 0);
  await cancel(as, a);
  const chatCancel = await as.post(`/executions/${sent.body.execution.id}/cancel`);
  expect(chatCancel.status).toBe(200);
  await gaugesAre(0, 0);
  // The failed one, a and the chat's: none for the client that left.
  expect(await Execution.countDocuments({ organizationId: org.organizationId })).toBe(3);

  // Two executions at once still run side by side: both slots are there.
  const [x, y] = await Promise.all([
    as.post(`/agents/${agentId}/execute`, { message: '[chunks:1] x' }),
    as.post(`/agents/${agentId}/execute`, { message: '[chunks:1] y' }),
  ]);
  expect([x.status, y.status]).toEqual([200, 200]);
  await gaugesAre(0, 0);
}, 120_000);

/** Starts a streamed execution with a concurrency key; resolves with its id once its `meta` event arrived. */
async function keyed(token: string, agentId: string, message: string, key: string) {
  const live = await openSse(`${stack.base}/api/v1/agents/${agentId}/execute`, {
    method: 'POST',
    headers: { authorization: bearer(token) },
    body: { message, stream: true, concurrencyKey: key },
  });
  expect(live.status).toBe(200);
  await live.waitFor(1);
  return { id: JSON.parse(live.events[0].data).executionId as string, live };
}

it('executions queued for a concurrency key hold no slot while they wait, and take one again in turn', async () => {
  const { token, agentId, as } = await setup();
  const key = `k-${randomBytes(4).toString('hex')}`;
  const holder = await keyed(token, agentId, '[hang]', key);
  await until(
    () => Execution.findById(holder.id).lean<ExecutionDoc>(),
    (e) => e?.status === 'running',
    30_000,
    20
  );
  // Three more on the key, at a bound of two slots: each is admitted, queues, and gives its slot back.
  const queued = [];
  for (const n of [1, 2, 3]) {
    const q = await keyed(token, agentId, `[chunks:1] q${n}`, key);
    await q.live.waitFor(2);
    expect(q.live.events[1].event).toBe('queued');
    queued.push(q);
  }
  await gaugesAre(1, 0);
  // Others are admitted meanwhile: the second slot is free.
  const other = await hold(stack.base, token, agentId);
  await gaugesAre(2, 0);

  // The holder ends: the queued ones run one after the other, each taking a slot again (never more than two).
  await cancel(as, holder);
  for (const q of queued) await q.live.ended;
  const records = await Promise.all(queued.map((q) => Execution.findById(q.id).lean<ExecutionDoc>().orFail()));
  expect(records.map((r) => [r.status, r.result])).toEqual([
    ['completed', 'tok1 '],
    ['completed', 'tok1 '],
    ['completed', 'tok1 '],
  ]);
  for (let i = 1; i < records.length; i++)
    expect(records[i].startedAt!.getTime()).toBeGreaterThanOrEqual(records[i - 1].completedAt!.getTime());
  await gaugesAre(1, 0);
  await cancel(as, other);
  await gaugesAre(0, 0);
}, 120_000);

it('past EXECUTION_QUEUE_WAIT_MS a waiting request is answered 503 with Retry-After', async () => {
  // A second api on the same task queue, with one slot and a short wait; its executions run on this file's worker.
  const app = createTestApp({
    ANTHROPIC_API_KEY: 'test-key',
    ANTHROPIC_BASE_URL: stack.fake.url,
    TEMPORAL_TASK_QUEUE: stack.t.config.temporalTaskQueue,
    EXECUTION_CONCURRENCY: '1',
    EXECUTION_QUEUE_WAIT_MS: '300',
  });
  try {
    const base = await app.listen();
    const org = await buildOrg();
    const as = v1As(app, org.apiToken);
    const agent = await as.post('/agents', { name: 'Short wait', systemPrompt: 'p' });
    const held = await hold(base, org.apiToken, agent.body.id);
    const before = await refused('wait_timeout');
    const res = await as.post(`/agents/${agent.body.id}/execute`, { message: 'late' });
    expect(res.status).toBe(503);
    expect(res.headers['retry-after']).toMatch(/^[1-9][0-9]*$/);
    expect(res.body).toEqual(v1Error(503, 'Service Unavailable', AT_CAPACITY));
    expect(await refused('wait_timeout')).toBe(before + 1);
    await cancel(as, held);
    // Its slot came back (the finish ran in this process's worker): the next request runs.
    const next = await as.post(`/agents/${agent.body.id}/execute`, { message: '[chunks:1] next' });
    expect(next.status).toBe(200);
    expect(next.body.result).toBe('tok1 ');
  } finally {
    await app.close();
  }
}, 120_000);

describe('an api whose executions run in a worker-only process', () => {
  let app: TestApp | undefined;
  let worker: Spawned | undefined;
  afterAll(async () => {
    worker?.crash();
    await app?.close();
  });

  it('the slot of an execution that ended in the other process comes back by the sweep', async () => {
    const env = {
      ANTHROPIC_API_KEY: 'test-key',
      ANTHROPIC_BASE_URL: stack.fake.url,
      TEMPORAL_TASK_QUEUE: `admission-2-${randomBytes(4).toString('hex')}`,
    };
    // No worker here (plain starts), one slot: only the worker process runs executions, and nothing tells this
    // process that a chat's execution ended but the sweep's read of its record.
    app = createTestApp({ ...env, EXECUTION_CONCURRENCY: '1' });
    worker = spawnScript('worker/index.ts', childTestEnv({ ...env, MONGODB_URI: db.uri }));
    await worker.waitFor(/worker started/, 90_000);
    const org = await buildOrg();
    const api = currentAs(app, org.serviceToken);
    const agent = await api.post('/agents', { name: 'Elsewhere', system_prompt: 'p' });
    const ws = await api.post('/workspaces', { name: 'W' });
    const chat = await api.post('/chats', { agent_id: agent.body.agent.id, workspace_id: ws.body.workspace.id });
    const sent = await api.post(`/chats/${chat.body.chat.id}/messages`, { message: '[chunks:1] there' });
    expect(sent.status).toBe(201);
    await until(
      () => Execution.findById(sent.body.execution.id).lean<ExecutionDoc>(),
      (e) => e?.status === 'completed',
      60_000
    );
    // The one slot is still the chat's until the sweep reads that it ended; then this request runs.
    const res = await v1As(app, org.apiToken).post(`/agents/${agent.body.agent.id}/execute`, {
      message: '[chunks:2] next',
    });
    expect(res.status).toBe(200);
    expect(res.body.result).toBe('tok1 tok2 ');
    await gaugesAre(0, 0);
  }, 180_000);
});
