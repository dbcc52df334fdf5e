/**
 * Durability: a worker process killed (SIGKILL) in the middle of a streamed reply. A new worker process picks the
 * execution up after the heartbeat timeout and continues the reply where it stopped (assistant prefill), so the
 * client connected to the api sees every character exactly once: on the execution's own stream (v1 execute) and
 * on a durable chat's event stream (/api/chats), which the execution's activities mirror.
 */
import { lastSeq, readEvents, readWritten } from '../../commands/eventLog';
import { Chat, Execution, StreamEvent } from '../../models';
import { freePort } from '../../scripts/servers/launch';
import { childTestEnv } from '../helpers/env';
import { bearer, buildAgent, buildOrg, buildWorkspace } from '../helpers/factories';
import { useTestDatabase } from '../helpers/mongo';
import { spawnScript, type Spawned } from '../helpers/processes';
import { currentAs } from '../helpers/current';
import { openSse } from '../helpers/sse';
import { closeAfterAll } from '../helpers/teardown';
import { useExecutionStack } from '../helpers/worker';
import { executionWorkflowId } from '../../workflows/ids';

const db = useTestDatabase();
// The execution runs in worker processes, none in the test process.
const stack = useExecutionStack('crash', { DEFAULT_MODEL: 'claude-test' }, { worker: false });
const workers: Spawned[] = [];
closeAfterAll(() => workers.forEach((w) => w.crash()));

const chunks = (n: number): string => Array.from({ length: n }, (_, i) => `tok${i + 1} `).join('');

/**
 * @param env more of the worker's environment (a crash point: lib/crashPoints.ts).
 * @returns a new worker process on the test's task queue, once it polls.
 */
async function startWorker(env: Record<string, string> = {}): Promise<Spawned> {
  const w = spawnScript('worker/index.ts', childTestEnv({ ...stack.env, MONGODB_URI: db.uri, ...env }));
  workers.push(w);
  await w.waitFor(/worker started/, 90_000);
  return w;
}

/**
 * Waits until every execution workflow of the earlier tests has closed, so that none of them (a finish still running
 * when its worker is killed) is retried on a worker armed with a crash point, which would die in that one instead.
 */
async function earlierWorkDone(): Promise<void> {
  const ids = (await Execution.find({}, { _id: 1 }).lean()).map((e) => String(e._id));
  await Promise.all(
    ids.map((id) =>
      stack.t.temporal.client.workflow
        .getHandle(executionWorkflowId(id))
        .result()
        .catch(() => undefined)
    )
  );
}

/**
 * Stops every worker of the earlier tests, then starts one process armed with a crash point, either a worker or a
 * service process (HTTP and worker in one, executions started eagerly in it), and opens a streamed execution of a new
 * agent (through that service process, else through the test's api).
 * @param kind which process.
 * @param crashPoint where it dies (lib/crashPoints.ts).
 * @param message the execution's message (the fake model's directives).
 * @returns the dying process, the organization and the client's stream.
 */
async function streamWithCrashPoint(
  kind: 'worker' | 'service',
  crashPoint: string,
  message: string
): Promise<{
  dying: Spawned;
  org: Awaited<ReturnType<typeof buildOrg>>;
  stream: Awaited<ReturnType<typeof openSse>>;
}> {
  await earlierWorkDone();
  workers.forEach((w) => w.crash());
  await Promise.all(workers.map((w) => w.exited()));
  let dying: Spawned;
  let base = stack.base;
  if (kind === 'worker') dying = await startWorker({ AAS_TEST_CRASH_POINT: crashPoint });
  else {
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    dying = spawnScript(
      'worker/service.ts',
      childTestEnv({
        ...stack.env,
        MONGODB_URI: db.uri,
        HOST: '127.0.0.1',
        PORT: String(port),
        WAKEUP_HOST: '127.0.0.1',
        WORKFLOW_BUNDLE: process.env.AAS_WORKFLOW_BUNDLE ?? '',
        AAS_TEST_CRASH_POINT: crashPoint,
      })
    );
    workers.push(dying);
    await dying.waitFor(/worker started/, 90_000);
    await dying.waitFor(/api listening/, 90_000);
  }
  const org = await buildOrg();
  const agent = await stack.t.request
    .post('/api/v1/agents')
    .set('Authorization', bearer(org.apiToken))
    .send({ name: 'A', systemPrompt: 'p' });
  const stream = await openSse(`${base}/api/v1/agents/${agent.body.id}/execute`, {
    method: 'POST',
    headers: { authorization: bearer(org.apiToken) },
    body: { message, stream: true },
  });
  return { dying, org, stream };
}

it('a worker killed mid-stream: a new worker finishes the reply with no duplicated or missing text', async () => {
  const first = await startWorker();

  const org = await buildOrg();
  const agent = await stack.t.request
    .post('/api/v1/agents')
    .set('Authorization', bearer(org.apiToken))
    .send({ name: 'A', systemPrompt: 'p' });
  const stream = await openSse(`${stack.base}/api/v1/agents/${agent.body.id}/execute`, {
    method: 'POST',
    headers: { authorization: bearer(org.apiToken) },
    body: { message: '[chunks:40][slow:100]', stream: true },
  });
  // Far enough into the reply for the dying attempt's token counts to have been saved at least once.
  await stream.waitFor(10);
  first.crash();
  await first.exited();
  const requestsBefore = stack.fake.requests.length;
  await startWorker();
  await stream.ended;

  const expected = chunks(40);
  const events = stream.events;
  expect(events.map((e) => Number(e.id))).toEqual(events.map((_, i) => i + 1));
  const text = events
    .filter((e) => e.event === 'message')
    .map((e) => JSON.parse(e.data))
    .filter((d) => d.messageType === 'stream_event')
    .map((d) => d.delta.text)
    .join('');
  expect(text).toBe(expected);
  expect(events.at(-1)!.event).toBe('result');
  const { executionId } = JSON.parse(events[0].data);
  const exec = await Execution.findById(executionId).lean();
  expect(exec).toMatchObject({ status: 'completed', result: expected });
  // The retry asked the model to continue after the delivered text.
  const resumed = stack.fake.requests.slice(requestsBefore).find((r) => r.messages?.at(-1)?.role === 'assistant');
  expect(resumed).toBeDefined();
  expect(expected.startsWith(String(resumed!.messages!.at(-1)!.content))).toBe(true);

  // Usage counts every attempt the provider billed, the killed one included: its input tokens exactly (saved with
  // the head raise of its first delta), its output tokens as the deltas it had received when last saved.
  const billed = stack.fake.usage;
  const attempts = Object.values(exec!.usageByAttempt as Record<string, { inputTokens: number }>);
  expect(attempts.length).toBe(billed.length);
  expect(exec!.usage!.inputTokens).toBe(billed.reduce((n, u) => n + u.inputTokens, 0));
  const lastAttempt = billed.at(-1)!.outputTokens;
  expect(exec!.usage!.outputTokens).toBeGreaterThan(lastAttempt);
  expect(exec!.usage!.outputTokens).toBeLessThanOrEqual(billed.reduce((n, u) => n + u.outputTokens, 0));
  const result = JSON.parse(events.at(-1)!.data);
  expect(result.usage).toEqual({ input_tokens: exec!.usage!.inputTokens, output_tokens: exec!.usage!.outputTokens });
}, 120_000);

it('a worker killed mid-reply in a chat: the chat stream carries every character once, in order, then done', async () => {
  const first = await startWorker();
  const org = await buildOrg();
  const api = currentAs(stack.t, org.serviceToken);
  const agentId = await buildAgent(stack.t, org, { name: 'Chatty', system_prompt: 'p' });
  const { id: workspaceId } = await buildWorkspace(stack.t, { org, name: 'W' });
  const chat = await api.post('/chats', { agent_id: agentId, workspace_id: workspaceId });
  expect(chat.status).toBe(201);
  const chatId = chat.body.chat.id as string;
  const stream = await openSse(`${stack.base}/api/chats/${chatId}/events`, {
    headers: { authorization: bearer(org.serviceToken) },
  });
  const sent = await api.post(`/chats/${chatId}/messages`, { message: '[chunks:40][slow:100]' });
  expect(sent.status).toBe(201);
  const deltas = (): number => stream.events.filter((e) => e.event === 'message.delta').length;
  while (deltas() < 5) await stream.waitFor(stream.events.length + 1, 30_000);
  first.crash();
  await first.exited();
  await startWorker();
  const isDone = (): boolean =>
    stream.events.some((e) => e.event === 'chat.status' && JSON.parse(e.data).status === 'done');
  while (!isDone()) await stream.waitFor(stream.events.length + 1, 60_000);
  stream.close();

  const events = stream.events;
  const firstId = Number(events[0].id);
  expect(events.map((e) => Number(e.id))).toEqual(events.map((_, i) => firstId + i));
  const text = events
    .filter((e) => e.event === 'message.delta')
    .map((e) => JSON.parse(e.data).text)
    .join('');
  expect(text).toBe(chunks(40));
  expect(events.filter((e) => e.event === 'message.completed')).toHaveLength(1);
  const messages = await api.get(`/chats/${chatId}/messages`);
  expect(messages.body.messages.map((m: { role: string; content: string }) => [m.role, m.content])).toEqual([
    ['user', '[chunks:40][slow:100]'],
    ['assistant', chunks(40)],
  ]);
  // The chat holds its session (commands/conversations.ts): freed once, the reply in its history once.
  expect(await Chat.findById(chatId).lean()).toMatchObject({
    activeExecutionId: null,
    turns: 1,
    history: [sent.body.execution.id],
  });
}, 120_000);

it("a worker killed between a delta's insert and its head raise: the retry continues after the stored delta, no seam", async () => {
  // The earlier tests' workers are gone: the execution runs on the one with the crash point.
  // The first worker kills itself once the reply's third event (the second delta, several chunks coalesced) is
  // inserted and before the stream's head is raised over it (lib/crashPoints.ts).
  const { dying: first, stream } = await streamWithCrashPoint('worker', 'stream-head:exec:3', '[chunks:40][slow:10]');
  expect(await first.exited()).toMatchObject({ signal: 'SIGKILL' });
  expect(first.output()).toMatch(/crash point stream-head:exec:3 reached/);
  await stream.waitFor(1);
  const { executionId } = JSON.parse(stream.events[0].data);
  // What the dead attempt left: event 3 written, the head below it.
  const left = await StreamEvent.findById(`${executionId}:3`).lean();
  expect(left).not.toBeNull();
  expect(await lastSeq(executionId)).toBe(2);
  const storedThird = (left!.data as { delta: { text: string } }).delta.text;
  expect(storedThird.split(' ').filter(Boolean).length).toBeGreaterThan(1);
  await startWorker();
  await stream.ended;

  const expected = chunks(40);
  const events = stream.events;
  expect(events.map((e) => Number(e.id))).toEqual(events.map((_, i) => i + 1));
  const deltas = (list: typeof events): string[] =>
    list
      .filter((e) => e.event === 'message')
      .map((e) => JSON.parse(e.data))
      .filter((d) => d.messageType === 'stream_event')
      .map((d) => d.delta.text);
  // The client got the dead attempt's third event as stored, then the rest once, in order.
  expect(deltas(events)[1]).toBe(storedThird);
  expect(deltas(events).join('')).toBe(expected);
  // The stored stream is what the client read, event for event, and the record's reply is its text.
  const stored = await readEvents(executionId);
  expect(stored.map((e) => ({ id: String(e.seq), event: e.event, data: e.data }))).toEqual(
    events.map((e) => ({ id: e.id, event: e.event, data: JSON.parse(e.data) }))
  );
  expect(await Execution.findById(executionId).lean()).toMatchObject({ status: 'completed', result: expected });
  expect(events.at(-1)!.event).toBe('result');
}, 120_000);

it('a service process killed after its own client got a delta, before the head was raised: the client resumes elsewhere with no gap or repeat', async () => {
  // A service process (HTTP and worker in one, executions started eagerly in it): its client reads the stream from
  // the process's memory. It dies once event 3 is inserted, before raising the head over it (lib/crashPoints.ts).
  const {
    dying: service,
    org,
    stream: first,
  } = await streamWithCrashPoint('service', 'stream-head:exec:3', '[chunks:40][slow:10]');
  expect(await service.exited()).toMatchObject({ signal: 'SIGKILL' });
  await first.ended;
  const received = first.events.filter((e) => e.id);
  const { executionId } = JSON.parse(received[0].data);
  // The client had event 3, from memory, though no head was ever raised over it.
  expect(received.map((e) => e.id)).toEqual(['1', '2', '3']);
  expect(await lastSeq(executionId)).toBe(2);

  await startWorker();
  const resumed = await openSse(`${stack.base}/api/v1/executions/${executionId}/stream`, {
    headers: { authorization: bearer(org.apiToken), 'last-event-id': '3' },
  });
  expect(resumed.status).toBe(200);
  await resumed.ended;
  const all = [...received, ...resumed.events.filter((e) => e.id)];
  expect(all.map((e) => Number(e.id))).toEqual(all.map((_, i) => i + 1));
  const text = all
    .filter((e) => e.event === 'message')
    .map((e) => JSON.parse(e.data))
    .filter((d) => d.messageType === 'stream_event')
    .map((d) => d.delta.text)
    .join('');
  expect(text).toBe(chunks(40));
  expect(all.at(-1)!.event).toBe('result');
  // What the client read, before and after the crash, is the stored stream.
  const stored = await readEvents(executionId);
  expect(stored.map((e) => ({ id: String(e.seq), event: e.event, data: e.data }))).toEqual(
    all.map((e) => ({ id: e.id, event: e.event, data: JSON.parse(e.data) }))
  );
}, 150_000);

it("a service process killed right after its reply took the eager start's record: another worker claims it in the database and runs it", async () => {
  // A service process starts the execution eagerly: the record is `running` from its creation and handed to the reply
  // in memory (commands/executionClaim.ts). The process dies once the reply took it, the only claim in its memory.
  const {
    dying: service,
    org,
    stream: first,
  } = await streamWithCrashPoint('service', 'claim:eager', '[chunks:20][slow:10]');
  expect(await service.exited()).toMatchObject({ signal: 'SIGKILL' });
  expect(service.output()).toMatch(/crash point claim:eager reached/);
  await first.ended;
  const received = first.events.filter((e) => e.id);
  const { executionId } = JSON.parse(received[0].data);
  // Nothing was written past `meta`, and the record still says an eager start claimed it.
  expect(received.map((e) => e.id)).toEqual(['1']);
  expect(await Execution.findById(executionId).lean()).toMatchObject({ status: 'running', eagerClaim: true });

  await startWorker();
  const resumed = await openSse(`${stack.base}/api/v1/executions/${executionId}/stream`, {
    headers: { authorization: bearer(org.apiToken), 'last-event-id': '1' },
  });
  expect(resumed.status).toBe(200);
  await resumed.ended;
  const all = [...received, ...resumed.events.filter((e) => e.id)];
  expect(all.map((e) => Number(e.id))).toEqual(all.map((_, i) => i + 1));
  const text = all
    .filter((e) => e.event === 'message')
    .map((e) => JSON.parse(e.data))
    .filter((d) => d.messageType === 'stream_event')
    .map((d) => d.delta.text)
    .join('');
  expect(text).toBe(chunks(20));
  expect(all.at(-1)!.event).toBe('result');
  // The new worker claimed it in the database (the flag cleared) and ran it to the end.
  const exec = await Execution.findById(executionId).lean();
  expect(exec).toMatchObject({ status: 'completed', result: chunks(20) });
  expect((exec as { eagerClaim?: boolean }).eagerClaim).toBeUndefined();
}, 150_000);

it('a worker killed in the finish, after the outcome made the final events, the chat held: nothing lost or repeated', async () => {
  // The reply (`[whole]`: it arrives in one piece) is held back and handed to the finish, whose outcome write makes
  // it and the final events part of the stream (made from the record: commands/executionFinal.ts); the worker dies
  // right after it, before the chat is freed (lib/crashPoints.ts).
  const { dying: first, stream } = await streamWithCrashPoint('worker', 'finish:final-events', '[chunks:20][whole] hi');
  expect(await first.exited()).toMatchObject({ signal: 'SIGKILL' });
  expect(first.output()).toMatch(/crash point finish:final-events reached/);
  await stream.waitFor(1);
  const { executionId } = JSON.parse(stream.events[0].data);
  // The dead finish stored none of the stream: the reply's end and the final events came with the outcome, which
  // raised the head over them; the chat is still held.
  expect(await lastSeq(executionId)).toBe(4);
  const left = await readWritten(executionId);
  expect(left.map((e) => e.event)).toEqual(['meta', 'message', 'message', 'result']);
  expect(await StreamEvent.collection.countDocuments({ _id: { $regex: `^${executionId}:` } } as never)).toBe(0);
  const { chatId } = (await Execution.findById(executionId).lean())!;
  expect(await Chat.findById(chatId).lean()).toMatchObject({ activeExecutionId: executionId });
  await startWorker();
  await stream.ended;

  const expected = chunks(20);
  const events = stream.events;
  expect(events.map((e) => Number(e.id))).toEqual([1, 2, 3, 4]);
  const data = events.map((e) => JSON.parse(e.data));
  expect(data[1]).toEqual({ messageType: 'stream_event', delta: { type: 'text_delta', text: expected } });
  expect(data[2]).toMatchObject({ messageType: 'assistant', content: [{ type: 'text', text: expected }] });
  expect(events[3].event).toBe('result');
  // The stream as read is what the client read, the end of the reply and the final events made from the record
  // (none stored); the task run again found the execution ended (no model call) and its finish freed the chat.
  const stored = await readWritten(executionId);
  expect(stored.map((e) => ({ id: String(e.seq), event: e.event, data: e.data }))).toEqual(
    events.map((e, i) => ({ id: e.id, event: e.event, data: data[i] }))
  );
  expect(await Execution.findById(executionId).lean()).toMatchObject({
    status: 'completed',
    result: expected,
    finalFrom: 2,
    heldFrom: 0,
  });
  expect(await StreamEvent.collection.countDocuments({ _id: { $regex: `^${executionId}:` } } as never)).toBe(0);
  for (let i = 0; i < 300 && (await Chat.findById(chatId).lean())?.activeExecutionId !== null; i++)
    await new Promise((r) => setTimeout(r, 100));
  expect(await Chat.findById(chatId).lean()).toMatchObject({ activeExecutionId: null, history: [executionId] });
  expect(stack.fake.requests.filter((r) => JSON.stringify(r.messages).includes('[chunks:20][whole] hi'))).toHaveLength(
    1
  );
}, 120_000);

it("a worker killed after the reply's first delta: the killed attempt's input tokens are counted, carried by that delta's head raise", async () => {
  await earlierWorkDone();
  workers.forEach((w) => w.crash());
  await Promise.all(workers.map((w) => w.exited()));
  // No periodic save before the kill (USAGE_SAVE_MS a minute): the head raise of the first delta is the only write
  // that can have saved the attempt's input tokens (activities/executionUsage.ts `headFields`).
  const first = await startWorker({ USAGE_SAVE_MS: '60000' });
  const org = await buildOrg();
  const agent = await stack.t.request
    .post('/api/v1/agents')
    .set('Authorization', bearer(org.apiToken))
    .send({ name: 'A', systemPrompt: 'p' });
  const billedBefore = stack.fake.usage.length;
  const stream = await openSse(`${stack.base}/api/v1/agents/${agent.body.id}/execute`, {
    method: 'POST',
    headers: { authorization: bearer(org.apiToken) },
    body: { message: '[chunks:40][slow:200]', stream: true },
  });
  // `meta`, then the first delta: this worker wrote it and raised the head over it (the api is another process, so
  // the client gets it after the head raise).
  await stream.waitFor(2);
  first.crash();
  await first.exited();
  const { executionId } = JSON.parse(stream.events[0].data);
  const killed = await Execution.findById(executionId).lean();
  const saved = Object.values(
    (killed!.usageByAttempt ?? {}) as Record<string, { inputTokens: number; outputTokens: number }>
  );
  expect(saved).toHaveLength(1);
  expect(saved[0].inputTokens).toBe(stack.fake.usage[billedBefore].inputTokens);
  expect(saved[0].outputTokens).toBeGreaterThanOrEqual(1);
  await startWorker();
  await stream.ended;

  const events = stream.events;
  expect(events.at(-1)!.event).toBe('result');
  const exec = await Execution.findById(executionId).lean();
  expect(exec).toMatchObject({ status: 'completed', result: chunks(40) });
  // Both attempts counted: the killed one's input tokens exactly, its output as the deltas its last head raise saw.
  const billed = stack.fake.usage.slice(billedBefore);
  expect(billed).toHaveLength(2);
  expect(Object.keys(exec!.usageByAttempt as object)).toHaveLength(2);
  expect(exec!.usage!.inputTokens).toBe(billed[0].inputTokens + billed[1].inputTokens);
  expect(exec!.usage!.outputTokens).toBeGreaterThan(billed[1].outputTokens);
  expect(exec!.usage!.outputTokens).toBeLessThanOrEqual(billed[0].outputTokens + billed[1].outputTokens);
  expect(JSON.parse(events.at(-1)!.data).usage).toEqual({
    input_tokens: exec!.usage!.inputTokens,
    output_tokens: exec!.usage!.outputTokens,
  });
}, 120_000);
