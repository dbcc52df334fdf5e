/**
 * Durability: a worker process killed (SIGKILL) in the middle of a streamed reply. A new worker process picks the
 * execution up after the heartbeat timeout and continues the reply where it stopped (assistant prefill), so the
 * client connected to the api sees every character exactly once: on the execution's own stream (v1 execute) and
 * on a durable chat's event stream (/api/chats), which the execution's activities mirror.
 */
import { Chat, Execution } from '../../models';
import { childTestEnv } from '../helpers/env';
import { bearer, buildAgent, buildOrg, buildWorkspace } from '../helpers/factories';
import { useTestDatabase } from '../helpers/mongo';
import { spawnScript, type Spawned } from '../helpers/processes';
import { currentAs } from '../helpers/current';
import { openSse } from '../helpers/sse';
import { closeAfterAll } from '../helpers/teardown';
import { useExecutionStack } from '../helpers/worker';

const db = useTestDatabase();
// The execution runs in worker processes, none in the test process.
const stack = useExecutionStack('crash', { DEFAULT_MODEL: 'claude-test' }, { worker: false });
const workers: Spawned[] = [];
closeAfterAll(() => workers.forEach((w) => w.crash()));

const chunks = (n: number): string => Array.from({ length: n }, (_, i) => `tok${i + 1} `).join('');

/** @returns a new worker process on the test's task queue, once it polls. */
async function startWorker(): Promise<Spawned> {
  const w = spawnScript('worker/index.ts', childTestEnv({ ...stack.env, MONGODB_URI: db.uri }));
  workers.push(w);
  await w.waitFor(/worker started/, 90_000);
  return w;
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

  // Usage counts every attempt the provider billed, the killed one included: its input tokens exactly (saved as
  // soon as the provider reported them), its output tokens as the deltas it had received when last saved.
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
