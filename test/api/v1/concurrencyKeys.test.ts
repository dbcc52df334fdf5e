/**
 * Concurrency keys (issue 39 point 4; docs/fairness.md "Concurrency keys"), over real HTTP with the real Temporal
 * server and the worker in this process: a key of 1 runs two executions one after the other (the second shows
 * `queued` first, in its stream and its record), a queued execution cancelled leaves the line and frees nothing
 * twice, and the next one still runs; the agent's maxConcurrentExecutions is the same mechanism. No time is measured:
 * order is read from the records. A `[hang]` reply holds its key until it is cancelled.
 */
import { executionsAdmitted } from '../../../lib/metrics';
import { ConcurrencySlot, Execution, Job, type ExecutionDoc } from '../../../models';
import { currentAs } from '../../helpers/current';
import { buildAgent, buildOrg, buildWorkspace, bearer } from '../../helpers/factories';
import { useTestDatabase } from '../../helpers/mongo';
import { openSse, type LiveStream } from '../../helpers/sse';
import { until } from '../../helpers/until';
import { v1As } from '../../helpers/v1';
import { useExecutionStack, useTestWorker, useWorkerProcesses } from '../../helpers/worker';

const db = useTestDatabase();
const stack = useExecutionStack('concurrency', {}, { worker: false });

async function setup() {
  const org = await buildOrg();
  const as = v1As(stack.t, org.apiToken);
  const agent = await as.post('/agents', { name: 'Keyed', systemPrompt: 'p' });
  expect(agent.status).toBe(200);
  return { org, agentId: agent.body.id as string, as };
}

/** Starts a streamed execution; resolves once its `meta` event (its id) arrived. */
async function start(
  token: string,
  agentId: string,
  body: Record<string, unknown>
): Promise<{ id: string; live: LiveStream }> {
  const live = await openSse(`${stack.base}/api/v1/agents/${agentId}/execute`, {
    method: 'POST',
    headers: { authorization: bearer(token) },
    body: { ...body, stream: true },
  });
  expect(live.status).toBe(200);
  await live.waitFor(1);
  expect(live.events[0].event).toBe('meta');
  return { id: JSON.parse(live.events[0].data).executionId as string, live };
}

const record = (id: string): Promise<ExecutionDoc> => Execution.findById(id).lean<ExecutionDoc>().orFail();
/** Waits for an execution's status (its record may not be written yet: a job's iteration is prepared after it is named). */
const statusIs = (id: string, status: string): Promise<unknown> =>
  until(
    () => Execution.findById(id).lean<ExecutionDoc>(),
    (e) => e?.status === status,
    30_000,
    50
  );

/** The admission slots the api (this process) holds. */
const admitted = async (): Promise<number> => (await executionsAdmitted.get()).values[0]?.value ?? 0;

/** Waits until nothing holds or waits for a key. */
const keyIsFree = (id: string): Promise<unknown> =>
  until(
    () => ConcurrencySlot.findById(id).lean(),
    (slot) => slot?.holders.length === 0 && slot.waiting.length === 0,
    30_000,
    50
  );

describe('with a worker in the test process', () => {
  useTestWorker(() => stack.t, { describe: true });

  it('a concurrency key of 1 runs two executions one after the other; the second shows queued first', async () => {
    const { org, agentId, as } = await setup();
    const a = await start(org.apiToken, agentId, { message: '[hang]', concurrencyKey: 'customer-1' });
    await statusIs(a.id, 'running');
    const b = await start(org.apiToken, agentId, { message: '[chunks:2] second', concurrencyKey: 'customer-1' });
    await b.live.waitFor(2);
    expect(b.live.events[1].event).toBe('queued');
    expect(JSON.parse(b.live.events[1].data)).toEqual({ executionId: b.id, kind: 'key', key: 'customer-1' });
    await statusIs(b.id, 'queued');
    const listed = await as.get(`/executions/${b.id}`);
    expect(listed.status).toBe(200);
    expect(listed.body.execution?.status ?? listed.body.status).toBe('queued');
    // Another key, or none, is not held up.
    const other = await as.post(`/agents/${agentId}/execute`, { message: 'other', concurrencyKey: 'customer-2' });
    expect(other.status).toBe(200);

    expect((await as.post(`/executions/${a.id}/cancel`)).status).toBe(200);
    await a.live.ended;
    await b.live.ended;
    const [ra, rb] = [await record(a.id), await record(b.id)];
    expect([ra.status, rb.status, rb.result]).toEqual(['cancelled', 'completed', 'tok1 tok2 ']);
    expect(rb.startedAt!.getTime()).toBeGreaterThanOrEqual(ra.completedAt!.getTime());
    expect(b.live.events.at(-1)!.event).toBe('result');
    // The finish releases the key right after it wrote the terminal event.
    await keyIsFree(`${org.organizationId}:key:customer-1`);
  });

  it('a queued execution cancelled leaves the line, frees nothing twice, and the next one still runs', async () => {
    const { org, agentId, as } = await setup();
    const key = { concurrencyKey: 'chat-7' };
    const a = await start(org.apiToken, agentId, { message: '[hang]', ...key });
    await statusIs(a.id, 'running');
    const b = await start(org.apiToken, agentId, { message: 'b', ...key });
    await statusIs(b.id, 'queued');
    const c = await start(org.apiToken, agentId, { message: '[chunks:1] c', ...key });
    await statusIs(c.id, 'queued');

    // The queued b is cancelled: it leaves the line; a still holds the key, c still waits.
    expect((await as.post(`/executions/${b.id}/cancel`)).status).toBe(200);
    await b.live.ended;
    expect((await record(b.id)).status).toBe('cancelled');
    const id = `${org.organizationId}:key:chat-7`;
    // Its finish takes it out of the line right after it wrote its outcome.
    await until(
      () => ConcurrencySlot.findById(id).lean(),
      (slot) => slot?.waiting.length === 1,
      30_000,
      50
    );
    expect(await ConcurrencySlot.findById(id).lean()).toMatchObject({ holders: [a.id], waiting: [c.id] });
    expect((await record(c.id)).status).toBe('queued');

    // a ends: c runs, alone.
    expect((await as.post(`/executions/${a.id}/cancel`)).status).toBe(200);
    await c.live.ended;
    expect((await record(c.id)).status).toBe('completed');
    await keyIsFree(id);
  });

  it("the agent's maxConcurrentExecutions queues the executions past it (current surface field max_concurrent_executions)", async () => {
    const { org, agentId, as } = await setup();
    const set = await stack.t.request
      .patch(`/api/agents/${agentId}`)
      .set('Authorization', bearer(org.serviceToken))
      .send({ max_concurrent_executions: 1 });
    expect(set.status).toBe(200);
    expect(set.body.agent?.max_concurrent_executions ?? set.body.max_concurrent_executions).toBe(1);
    const a = await start(org.apiToken, agentId, { message: '[hang]' });
    await statusIs(a.id, 'running');
    const b = await start(org.apiToken, agentId, { message: '[chunks:1] b' });
    await b.live.waitFor(2);
    expect(JSON.parse(b.live.events[1].data)).toEqual({ executionId: b.id, kind: 'agent', key: agentId });
    expect((await as.post(`/executions/${a.id}/cancel`)).status).toBe(200);
    await b.live.ended;
    expect((await record(b.id)).status).toBe('completed');
  });

  it('maxConcurrentExecutions set when the agent is created (current surface) queues from the first execution on', async () => {
    const org = await buildOrg();
    const made = await stack.t.request
      .post('/api/agents')
      .set('Authorization', bearer(org.serviceToken))
      .send({ name: 'Limited', system_prompt: 'p', max_concurrent_executions: 1 });
    expect(made.status).toBe(201);
    expect(made.body.agent.max_concurrent_executions).toBe(1);
    const agentId = made.body.agent.id as string;
    const bad = await stack.t.request
      .post('/api/agents')
      .set('Authorization', bearer(org.serviceToken))
      .send({ name: 'Bad', system_prompt: 'p', max_concurrent_executions: 0 });
    expect(bad.status).toBe(400);
    const a = await start(org.apiToken, agentId, { message: '[hang]' });
    await statusIs(a.id, 'running');
    const b = await start(org.apiToken, agentId, { message: '[chunks:1] b' });
    await b.live.waitFor(2);
    expect(JSON.parse(b.live.events[1].data)).toEqual({ executionId: b.id, kind: 'agent', key: agentId });
    expect((await v1As(stack.t, org.apiToken).post(`/executions/${a.id}/cancel`)).status).toBe(200);
    await b.live.ended;
    expect((await record(b.id)).status).toBe('completed');
  });

  it("start-work's concurrency_key: the job's iteration waits for the key like an execution, then runs", async () => {
    const org = await buildOrg();
    const api = currentAs(stack.t, org.serviceToken);
    const agentId = await buildAgent(stack.t, org, { name: 'Worker', system_prompt: 'p' });
    const { id: workspaceId } = await buildWorkspace(stack.t, { org, name: 'Keys' });
    const mission = (await api.post('/missions', { title: 'M', goal: 'Ship it', agentType: agentId, workspaceId })).body
      .mission;
    const task = (await api.post(`/missions/${mission.id}/tasks`, { title: 'Write docs' })).body.task;
    const path = `/missions/${mission.id}/tasks/${task.id}/start-work`;
    for (const bad of [{ concurrency_limit: 0, concurrency_key: 'k' }, { concurrency_key: 5 }, { key: 'k' }]) {
      const res = await api.post(path, bad);
      expect(res.status).toBe(400);
      expect(res.body.error.message).toEqual(expect.any(String));
    }
    expect(await Job.countDocuments({ organizationId: org.organizationId })).toBe(0);

    // An execution holds the key; the job's first iteration then waits for it.
    const holder = await start(org.apiToken, agentId, { message: '[hang]', concurrencyKey: 'customer-9' });
    await statusIs(holder.id, 'running');
    const work = await api.post(path, { concurrency_key: 'customer-9' });
    expect(work.status).toBe(201);
    const jobId = work.body.jobId as string;
    const iteration = (await until(
      () => Job.findById(jobId).lean(),
      (j) => (j?.iterations.length ?? 0) > 0,
      30_000,
      50
    ))!.iterations[0].executionId;
    await statusIs(iteration, 'queued');
    const id = `${org.organizationId}:key:customer-9`;
    expect(await ConcurrencySlot.findById(id).lean()).toMatchObject({ holders: [holder.id], waiting: [iteration] });

    expect((await v1As(stack.t, org.apiToken).post(`/executions/${holder.id}/cancel`)).status).toBe(200);
    await statusIs(iteration, 'completed');
    const [rh, ri] = [await record(holder.id), await record(iteration)];
    expect([rh.status, ri.source, ri.jobId]).toEqual(['cancelled', 'job', jobId]);
    expect(ri.startedAt!.getTime()).toBeGreaterThanOrEqual(rh.completedAt!.getTime());
    await until(
      () => Job.findById(jobId).lean(),
      (j) => j?.status === 'completed',
      30_000,
      50
    );
    await keyIsFree(id);
  }, 120_000);
});

describe('a worker killed while an execution holds the key', () => {
  const { start: startWorker } = useWorkerProcesses(stack, db);

  it('loses nothing: the holder finishes on another worker, and the queued one still runs after it', async () => {
    const first = await startWorker();
    const { org, agentId } = await setup();
    const key = { concurrencyKey: `k-${Date.now()}` };
    // A reply of about 4 s: the worker dies in the middle of it, holding the key.
    const a = await start(org.apiToken, agentId, { message: '[chunks:40][slow:100] a', ...key });
    // The line's order is the order of the claims, made by each execution's workflow: a claims first.
    await statusIs(a.id, 'running');
    const b = await start(org.apiToken, agentId, { message: '[chunks:1] b', ...key });
    await statusIs(b.id, 'queued');
    await a.live.waitFor(6);
    first.crash();
    await first.exited();
    await startWorker();
    await a.live.ended;
    await b.live.ended;
    const [ra, rb] = [await record(a.id), await record(b.id)];
    expect([ra.status, rb.status, rb.result]).toEqual(['completed', 'completed', 'tok1 ']);
    expect(rb.startedAt!.getTime()).toBeGreaterThanOrEqual(ra.completedAt!.getTime());
    await keyIsFree(`${org.organizationId}:key:${key.concurrencyKey}`);
  }, 240_000);

  it('a worker killed while executions wait for the key: none lost, none run twice; the api held no slot for them meanwhile', async () => {
    const first = await startWorker();
    const { org, agentId } = await setup();
    const key = { concurrencyKey: `k-${Date.now()}` };
    const a = await start(org.apiToken, agentId, { message: '[chunks:40][slow:100] a', ...key });
    await statusIs(a.id, 'running');
    const nonce = Date.now().toString(36);
    const waiting = [];
    for (const n of [1, 2, 3]) {
      const w = await start(org.apiToken, agentId, { message: `[chunks:1] w${n}-${nonce}`, ...key });
      await statusIs(w.id, 'queued');
      waiting.push(w);
    }
    // Their claims ran in the worker; the api saw their `queued` events and gave their slots back: only a holds one.
    await until(admitted, (n) => n === 1, 30_000, 20);

    await a.live.waitFor(6);
    first.crash();
    await first.exited();
    await startWorker();
    await a.live.ended;
    for (const w of waiting) await w.live.ended;
    const records = [await record(a.id), ...(await Promise.all(waiting.map((w) => record(w.id))))];
    expect(records.map((r) => r.status)).toEqual(['completed', 'completed', 'completed', 'completed']);
    for (let i = 1; i < records.length; i++)
      expect(records[i].startedAt!.getTime()).toBeGreaterThanOrEqual(records[i - 1].completedAt!.getTime());
    // Each waiting one ran once: one model call, one result in its stream.
    for (const [i, w] of waiting.entries()) {
      const calls = stack.fake.requests.filter((r) => JSON.stringify(r.messages).includes(`w${i + 1}-${nonce}`));
      expect(calls).toHaveLength(1);
      expect(w.live.events.filter((e) => e.event === 'result')).toHaveLength(1);
    }
    await keyIsFree(`${org.organizationId}:key:${key.concurrencyKey}`);
    await until(admitted, (n) => n === 0, 30_000, 20);
  }, 240_000);
});
