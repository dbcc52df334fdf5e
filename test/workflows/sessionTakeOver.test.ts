/**
 * Durability of the reply on the execution record (issue 37 lever 3): a chat's finish writes the outcome (holding the
 * reply) first and frees the chat after (activities/executionFinish.ts). A worker killed (SIGKILL) between the two
 * leaves an ended execution holding the chat: the next message takes the chat over (commands/conversations.ts
 * `takeTurn`) with the ended turn in its history, and the retried finish on a new worker leaves the chat alone.
 * Nothing lost (the history, the messages, the chat's state) and nothing repeated (events, service events, turns).
 */
import { readEvents } from '../../commands/eventLog';
import { Chat, ChatMessage, Execution, ServiceEvent } from '../../models';
import { executionWorkflowId } from '../../workflows/ids';
import { currentAs } from '../helpers/current';
import { childTestEnv } from '../helpers/env';
import { bearer, buildOrg } from '../helpers/factories';
import { useTestDatabase } from '../helpers/mongo';
import { spawnScript, type Spawned } from '../helpers/processes';
import { openSse } from '../helpers/sse';
import { closeAfterAll } from '../helpers/teardown';
import { v1As } from '../helpers/v1';
import { useExecutionStack } from '../helpers/worker';

const db = useTestDatabase();
// The executions run in worker processes, none in the test process.
const stack = useExecutionStack('take-over', { DEFAULT_MODEL: 'claude-test' }, { worker: false });
const workers: Spawned[] = [];
closeAfterAll(() => workers.forEach((w) => w.crash()));

/** @returns a worker process on the test's task queue (the project's, or one that dies before a release), polling. */
async function startWorker(script: string): Promise<Spawned> {
  const w = spawnScript(script, childTestEnv({ ...stack.env, MONGODB_URI: db.uri }));
  workers.push(w);
  await w.waitFor(/worker started/, 90_000);
  return w;
}

it('a worker killed between the outcome and the release: the next message takes the chat over, nothing lost or repeated', async () => {
  const dying = await startWorker('test/helpers/workerDyingBeforeRelease.ts');
  const org = await buildOrg();
  const v1 = v1As(stack.t, org.apiToken);
  const agentId = (await v1.post('/agents', { name: 'Echo', systemPrompt: 'x' })).body.id as string;
  const execute = (body: object) =>
    openSse(`${stack.base}/api/v1/agents/${agentId}/execute`, {
      method: 'POST',
      headers: { authorization: bearer(org.apiToken) },
      body: { ...body, stream: true },
    });

  const first = await execute({ message: 'one' });
  await dying.waitFor(/dying before the chat is freed/, 60_000);
  await dying.exited();
  await first.ended;
  const { executionId: x, chatId, sessionId } = JSON.parse(first.events[0].data);
  expect(first.events.at(-1)!.event).toBe('result');
  // The crash hit the gap: the outcome (with the reply) is written, the chat still held by the ended execution.
  expect(await Execution.findById(x).lean()).toMatchObject({ status: 'completed', result: 'Echo: one' });
  expect(await Chat.findById(chatId).lean()).toMatchObject({ activeExecutionId: x, turns: 1, history: [] });

  // The next message is taken (no 409) while no worker runs, then answered by a new worker.
  const second = await execute({ message: 'two', chatId, sessionId });
  await second.waitFor(1);
  expect(second.events[0].event).toBe('meta');
  const y = JSON.parse(second.events[0].data).executionId as string;
  await startWorker('worker/index.ts');
  await second.ended;
  expect(second.events.at(-1)!.event).toBe('result');
  // The ended turn is in the model's history; the retried finish of the first execution ends without a write.
  expect(stack.fake.requests.at(-1)!.messages).toEqual([
    { role: 'user', content: 'one' },
    { role: 'assistant', content: 'Echo: one' },
    { role: 'user', content: 'two' },
  ]);
  await stack.t.temporal.client.workflow.getHandle(executionWorkflowId(x)).result();
  expect(await Execution.findById(y).lean()).toMatchObject({ status: 'completed', turn: 2, result: 'Echo: two' });
  expect(await Chat.findById(chatId).lean()).toMatchObject({
    activeExecutionId: null,
    turns: 2,
    history: [x, y],
    status: 'done',
    lastMessage: 'Echo: two',
  });

  // Each stream ends once; each execution's webhook event once; no message documents: both turns read from records.
  for (const id of [x, y]) {
    const events = await readEvents(id);
    expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
    expect(events.filter((e) => e.event === 'result')).toHaveLength(1);
  }
  const finished = await ServiceEvent.find({ organizationId: org.organizationId, type: 'execution.completed' }).lean();
  expect(finished.map((e) => JSON.parse(e.data).executionId).sort()).toEqual([x, y].sort());
  expect(await ChatMessage.countDocuments({ chatId })).toBe(0);
  const messages = await currentAs(stack.t, org.serviceToken).get(`/chats/${chatId}/messages`);
  expect(messages.body.messages.map((m: { id: string; role: string; content: string }) => [m.id, m.content])).toEqual([
    [`${x}:user`, 'one'],
    [`${x}:assistant`, 'Echo: one'],
    [`${y}:user`, 'two'],
    [`${y}:assistant`, 'Echo: two'],
  ]);
}, 180_000);
