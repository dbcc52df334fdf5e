/**
 * Fork and rerun (issue 40 point 5, docs/decisions.md "Fork and rerun") through real HTTP, Temporal, the fake
 * Anthropic API and a real MCP server on loopback that counts its calls: a fork from the 2nd message holds 2 messages
 * and the model gets them as history; a fork from a user message sends it again (changed); a rerun from the last model
 * turn reuses the earlier tool call (the server is not called again, the model is asked once); a rerun from the tool
 * call calls it again; bad requests are 4xx and change nothing; a worker killed during a rerun loses and repeats
 * nothing.
 */
import { randomInt } from 'node:crypto';
import { Chat, ChatMessage, Execution } from '../../../models';
import { currentAs } from '../../helpers/current';
import { buildOrg } from '../../helpers/factories';
import { useStackWithMcpServer } from '../../helpers/mcpServer';
import { useTestDatabase } from '../../helpers/mongo';
import { until } from '../../helpers/until';
import { v1As } from '../../helpers/v1';
import { useTestWorker, useWorkerProcesses } from '../../helpers/worker';

const db = useTestDatabase();
// No worker in the test process at the file's level: the crash tests start worker processes on the same queue.
const { stack, mcp } = useStackWithMcpServer('fork-rerun');

/** An organization with an agent that has the test MCP server (`calc`). */
async function setUp() {
  const org = await buildOrg();
  const v1 = v1As(stack.t, org.apiToken);
  const server = await v1.post('/mcp-servers', { name: 'calc', url: mcp.url, headers: { Authorization: 'Bearer x' } });
  expect(server.status).toBe(200);
  const agent = await v1.post('/agents', {
    name: 'Calc',
    systemPrompt: 'Use your tools.',
    mcpServerIds: [server.body.mcpServer.id],
  });
  expect(agent.status).toBe(200);
  return { org, v1, api: currentAs(stack.t, org.serviceToken), agentId: agent.body.id as string };
}

const callsOf = (a: number): number => mcp.calls.filter((c) => c.args.a === a).length;

describe('with a worker in the test process', () => {
  useTestWorker(() => stack.t, { describe: true });

  it('a fork from the 2nd message holds 2 messages, the original is untouched, and the model gets them', async () => {
    const { v1, api, agentId } = await setUp();
    const one = await v1.post(`/agents/${agentId}/execute`, { message: 'one' });
    expect(one.status).toBe(200);
    const chatId: string = one.body.chatId;
    const two = await v1.post(`/agents/${agentId}/execute`, { message: 'two', chatId });
    expect(two.status).toBe(200);

    const fork = await api.post(`/chats/${chatId}/fork`, { message_id: `${one.body.executionId}:assistant` });
    expect(fork.status).toBe(201);
    expect(fork.body.execution).toBeUndefined();
    expect(fork.body.chat).toMatchObject({
      agent_id: agentId,
      forked_from: { chat_id: chatId, message_id: `${one.body.executionId}:assistant` },
    });
    const forkId: string = fork.body.chat.id;
    const forked = await api.get(`/chats/${forkId}/messages`);
    expect(forked.body.messages.map((m: { role: string; content: string }) => [m.role, m.content])).toEqual([
      ['user', 'one'],
      ['assistant', 'Echo: one'],
    ]);
    expect((await api.get(`/chats/${chatId}/messages`)).body.messages).toHaveLength(4);

    // The next message in the fork is answered with the fork's history: the two messages, then the new one.
    const before = stack.fake.requests.length;
    const three = await v1.post(`/agents/${agentId}/execute`, { message: 'three', chatId: forkId });
    expect(three.status).toBe(200);
    const sent = stack.fake.requests.slice(before).map((r) => r.messages?.map((m) => m.role));
    expect(sent).toEqual([['user', 'assistant', 'user']]);
    const after = await api.get(`/chats/${forkId}/messages`);
    expect(after.body.messages.map((m: { position: number }) => m.position)).toEqual([2, 3, 4, 5]);
    expect((await api.get(`/chats/${chatId}/messages`)).body.messages).toHaveLength(4);
  });

  it('a fork from a user message sends it again, changed, after the turns before it', async () => {
    const { v1, api, agentId } = await setUp();
    const one = await v1.post(`/agents/${agentId}/execute`, { message: 'one' });
    const chatId: string = one.body.chatId;
    const two = await v1.post(`/agents/${agentId}/execute`, { message: 'two', chatId });
    const fork = await api.post(`/chats/${chatId}/fork`, {
      message_id: `${two.body.executionId}:user`,
      message: 'two, changed',
    });
    expect(fork.status).toBe(201);
    expect(fork.body.execution.id).toEqual(expect.any(String));
    const forkId: string = fork.body.chat.id;
    await until(
      async () => (await Execution.findById(fork.body.execution.id).lean())?.status,
      (s) => s === 'completed',
      60_000
    );
    const messages = (await api.get(`/chats/${forkId}/messages`)).body.messages;
    expect(messages.map((m: { content: string }) => m.content)).toEqual([
      'one',
      'Echo: one',
      'two, changed',
      'Echo: two, changed',
    ]);
    // The original's second turn is as it was.
    expect((await api.get(`/chats/${chatId}/messages`)).body.messages[2].content).toBe('two');
  });

  it('bad forks are 4xx and write nothing', async () => {
    const { v1, api, agentId } = await setUp();
    const other = await setUp();
    const one = await v1.post(`/agents/${agentId}/execute`, { message: 'one' });
    const chatId: string = one.body.chatId;
    const chats = await Chat.countDocuments({});
    const messages = await ChatMessage.countDocuments({});
    const bad: Array<[string, object, number]> = [
      [chatId, {}, 400],
      [chatId, { message_id: 'nope' }, 400],
      [chatId, { message_id: `${one.body.executionId}:assistant`, message: 'x' }, 400],
      [chatId, { message_id: `${one.body.executionId}:assistant`, extra: 1 }, 400],
      ['chat_unknown', { message_id: `${one.body.executionId}:assistant` }, 404],
    ];
    for (const [id, body, status] of bad) {
      const res = await api.post(`/chats/${id}/fork`, body);
      expect([res.status, res.body.error?.code]).toEqual([status, expect.any(String)]);
    }
    // Another organization's chat does not exist for this one.
    const foreign = await other.api.post(`/chats/${chatId}/fork`, {
      message_id: `${one.body.executionId}:assistant`,
    });
    expect(foreign.status).toBe(404);
    expect(await Chat.countDocuments({})).toBe(chats);
    expect(await ChatMessage.countDocuments({})).toBe(messages);
  });

  it('steps, and a rerun from the last model turn reuses the tool call; from the tool call, calls it again', async () => {
    const { v1, agentId } = await setUp();
    const a = randomInt(1_000_000);
    const orig = await v1.post(`/agents/${agentId}/execute`, { message: `[tool:calc__add {"a":${a},"b":1}]` });
    expect(orig.status).toBe(200);
    expect(orig.body.result).toBe(`Using tools.Tool results: sum=${a + 1}`);
    expect(callsOf(a)).toBe(1);

    const steps = await v1.get(`/executions/${orig.body.executionId}/steps`);
    expect(steps.status).toBe(200);
    expect(steps.body.steps).toEqual([
      { step: 1, kind: 'model_turn', round: 1 },
      { step: 2, kind: 'tool_call', round: 1, toolUseId: expect.any(String), name: 'calc__add' },
      { step: 3, kind: 'model_turn', round: 2 },
    ]);

    const before = stack.fake.requests.length;
    const last = await v1.post(`/executions/${orig.body.executionId}/rerun`, { fromStep: 3 });
    expect(last.status).toBe(200);
    expect(last.body.result).toBe(`Using tools.Tool results: sum=${a + 1}`);
    expect(last.body.chatId).not.toBe(orig.body.chatId);
    // The tool was not called again, and the model was asked once: for the last turn, with the reused result.
    expect(callsOf(a)).toBe(1);
    const asked = stack.fake.requests.slice(before);
    expect(asked).toHaveLength(1);
    expect(asked[0].messages?.map((m) => m.role)).toEqual(['user', 'assistant', 'user']);
    const rerun = await v1.get(`/executions/${last.body.executionId}`);
    expect(rerun.body.execution.rerunOf).toEqual({ executionId: orig.body.executionId, fromStep: 3 });

    const fromTool = await v1.post(`/executions/${orig.body.executionId}/rerun`, { fromStep: 2 });
    expect(fromTool.status).toBe(200);
    expect(fromTool.body.result).toBe(`Using tools.Tool results: sum=${a + 1}`);
    expect(callsOf(a)).toBe(2);

    // A changed message, from the start: a new first turn.
    const changed = await v1.post(`/executions/${orig.body.executionId}/rerun`, { fromStep: 1, message: 'plain' });
    expect(changed.body.result).toBe('Echo: plain');
    expect(callsOf(a)).toBe(2);
  });

  it('bad reruns are 4xx', async () => {
    const { v1, agentId } = await setUp();
    const other = await setUp();
    const orig = await v1.post(`/agents/${agentId}/execute`, { message: 'one' });
    const id: string = orig.body.executionId;
    const cases: Array<[object, number]> = [
      [{}, 400],
      [{ fromStep: 0 }, 400],
      [{ fromStep: 'one' }, 400],
      [{ fromStep: 2 }, 400],
      [{ fromStep: 1, extra: true }, 400],
    ];
    for (const [body, status] of cases) {
      const res = await v1.post(`/executions/${id}/rerun`, body);
      expect([res.status, res.body.error]).toEqual([status, true]);
    }
    expect((await other.v1.post(`/executions/${id}/rerun`, { fromStep: 1 })).status).toBe(404);
    expect((await other.v1.get(`/executions/${id}/steps`)).status).toBe(404);
    // Still running: its steps are not known yet.
    // (then: a supertest request is sent once awaited)
    const slow = v1.post(`/agents/${agentId}/execute`, { message: '[chunks:40][slow:100] x' }).then((r) => r);
    const running = await until(
      () => Execution.findOne({ agentId, 'input.message': '[chunks:40][slow:100] x' }).lean(),
      (e) => e?.status === 'running',
      30_000
    );
    expect((await v1.post(`/executions/${running!._id}/rerun`, { fromStep: 1 })).status).toBe(409);
    expect((await slow).status).toBe(200);
  });
});

describe('a worker killed during a rerun', () => {
  const { start: startWorker } = useWorkerProcesses(stack, db);

  it('the next worker finishes it: the reused tool call is not made again, the reply is whole', async () => {
    const first = await startWorker();
    const { v1, agentId } = await setUp();
    const a = randomInt(1_000_000);
    const orig = await v1.post(`/agents/${agentId}/execute`, {
      message: `[tool:calc__add {"a":${a},"b":2}][slow:300]`,
    });
    expect(orig.status).toBe(200);
    expect(callsOf(a)).toBe(1);

    const asked = stack.fake.requests.length;
    const answer = v1.post(`/executions/${orig.body.executionId}/rerun`, { fromStep: 3 }).then((r) => r);
    // Killed while the rerun's last model turn streams (slowly): once its first delta was sent.
    await until(
      async () => stack.fake.usage[asked]?.outputTokens ?? 0,
      (n) => n > 0,
      60_000,
      50
    );
    const rerun = await Execution.findOne({ 'rerunOf.executionId': orig.body.executionId }).lean();
    expect(rerun?.status).toBe('running');
    first.crash();
    await first.exited();
    await startWorker();
    const res = await answer;
    expect(res.status).toBe(200);
    expect(res.body.result).toBe(`Using tools.Tool results: sum=${a + 2}`);
    expect(callsOf(a)).toBe(1);
    const done = await Execution.findById(rerun!._id).lean();
    expect(done).toMatchObject({ status: 'completed', rerunOf: { executionId: orig.body.executionId, fromStep: 3 } });
  }, 240_000);
});
