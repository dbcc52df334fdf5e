/**
 * The session on the chat (docs/decisions.md "The session on the chat", issue 37): a conversation started now keeps
 * its session's state on its chat document (no `sessions` document), and one recorded before (its state in a
 * `sessions` document) goes on as it did, through every way a `sessionId` or a chat comes in: the v1 execute by
 * `sessionId` alone or with its `chatId`, a chat message, a fork, the close of a chat. Real api, Temporal and worker.
 */
import { Chat, Execution, Session } from '../../../models';
import { currentAs } from '../../helpers/current';
import { buildOrg } from '../../helpers/factories';
import { useTestDatabase } from '../../helpers/mongo';
import { until } from '../../helpers/until';
import { v1As } from '../../helpers/v1';
import { useExecutionStack } from '../../helpers/worker';

useTestDatabase();
const stack = useExecutionStack('session-shapes', { DEFAULT_MODEL: 'claude-test' });

async function setup() {
  const org = await buildOrg();
  const v1 = v1As(stack.t, org.apiToken);
  const agent = await v1.post('/agents', { name: 'Echo', systemPrompt: 'x' });
  expect(agent.status).toBe(200);
  return { org, v1, current: currentAs(stack.t, org.serviceToken), agentId: agent.body.id as string };
}

/** @returns the messages the model was last sent, as [role, content]. */
const lastSent = (): Array<[string, unknown]> =>
  stack.fake.requests.at(-1)!.messages!.map((m) => [m.role, m.content] as [string, unknown]);

/**
 * Turns a conversation recorded now into one as the version before recorded it: the session's state in a `sessions`
 * document, none on the chat, its executions without `sessionOnChat`.
 */
async function asRecordedBefore(chatId: string): Promise<string> {
  const chat = (await Chat.findById(chatId).lean())!;
  await Session.collection.insertOne({
    _id: chat.sessionId,
    organizationId: chat.organizationId,
    chatId,
    agentId: chat.agentId,
    activeExecutionId: chat.activeExecutionId,
    turns: chat.turns,
    history: chat.history,
    chatStreamSeq: chat.chatStreamSeq,
    createdAt: chat.createdAt,
    updatedAt: chat.updatedAt,
  } as never);
  await Chat.collection.updateOne({ _id: chatId } as never, {
    $unset: { activeExecutionId: '', turns: '', history: '', chatStreamSeq: '' },
  });
  await Execution.collection.updateMany({ chatId } as never, { $unset: { sessionOnChat: '' } });
  return chat.sessionId!;
}

it('a new conversation keeps its session on the chat; a sessionId alone continues it', async () => {
  const { v1, agentId } = await setup();
  const first = await v1.post(`/agents/${agentId}/execute`, { message: 'one' });
  expect(first.status).toBe(200);
  const { chatId, sessionId } = first.body;
  expect(await Session.exists({ _id: sessionId })).toBeNull();
  expect(await Chat.findById(chatId).lean()).toMatchObject({
    sessionId,
    activeExecutionId: null,
    turns: 1,
    history: [first.body.executionId],
  });
  const second = await v1.post(`/agents/${agentId}/execute`, { message: 'two', sessionId });
  expect(second.body).toMatchObject({ success: true, chatId, sessionId, result: 'Echo: two' });
  expect(lastSent()).toEqual([
    ['user', 'one'],
    ['assistant', 'Echo: one'],
    ['user', 'two'],
  ]);
  expect(await Execution.findById(second.body.executionId).lean()).toMatchObject({ turn: 2, sessionOnChat: true });
});

it('a conversation recorded before (a sessions document) goes on in it: v1 execute, chat message, fork, close', async () => {
  const { v1, current, agentId } = await setup();
  const first = await v1.post(`/agents/${agentId}/execute`, { message: 'one' });
  const { chatId } = first.body;
  const sessionId = await asRecordedBefore(chatId);

  // By sessionId alone, then with its chat: the session document is taken and freed, the history read from it.
  const second = await v1.post(`/agents/${agentId}/execute`, { message: 'two', sessionId });
  expect(second.body).toMatchObject({ success: true, chatId, sessionId, result: 'Echo: two' });
  const third = await v1.post(`/agents/${agentId}/execute`, { message: 'three', sessionId, chatId });
  expect(third.body).toMatchObject({ success: true, chatId, sessionId, result: 'Echo: three' });
  expect(lastSent()).toEqual([
    ['user', 'one'],
    ['assistant', 'Echo: one'],
    ['user', 'two'],
    ['assistant', 'Echo: two'],
    ['user', 'three'],
  ]);
  expect(await Session.findById(sessionId).lean()).toMatchObject({
    activeExecutionId: null,
    turns: 3,
    history: [first.body.executionId, second.body.executionId, third.body.executionId],
  });
  const chat = (await Chat.findById(chatId).lean())!;
  expect(chat.turns).toBeUndefined();
  expect(chat.status).toBe('done');
  expect((await Execution.findById(third.body.executionId).lean())!.sessionOnChat).toBeUndefined();

  // A chat message in it (the current surface), which the close cancels while it runs.
  const sent = await current.post(`/chats/${chatId}/messages`, { message: 'long [chunks:200][slow:50]' });
  expect(sent.status).toBe(201);
  const busy = await v1.post(`/agents/${agentId}/execute`, { message: 'no', sessionId, chatId });
  expect(busy.status).toBe(409);

  // A fork of it from the second reply: the fork holds its session, whose history is the turns copied.
  const messages = await current.get(`/chats/${chatId}/messages`);
  const reply = messages.body.messages.find((m: { id: string }) => m.id === `${second.body.executionId}:assistant`);
  const fork = await current.post(`/chats/${chatId}/fork`, { message_id: reply.id });
  expect(fork.status).toBe(201);
  const forkId = fork.body.chat.id as string;
  expect(await Chat.findById(forkId).lean()).toMatchObject({
    activeExecutionId: null,
    turns: 2,
    history: [first.body.executionId, second.body.executionId],
  });
  const inFork = await v1.post(`/agents/${agentId}/execute`, { message: 'four', chatId: forkId });
  expect(inFork.body).toMatchObject({ success: true, chatId: forkId, result: 'Echo: four' });
  expect(lastSent()).toEqual([
    ['user', 'one'],
    ['assistant', 'Echo: one'],
    ['user', 'two'],
    ['assistant', 'Echo: two'],
    ['user', 'four'],
  ]);

  const closed = await current.del(`/chats/${chatId}`);
  expect(closed.body).toEqual({ id: chatId, deleted: true, cancelled_execution_id: sent.body.execution.id });
  await until(
    () => Session.findById(sessionId).lean(),
    (s) => s?.activeExecutionId === null
  );
});

it("a chat made with its agent gets its session on its first message, under an id derived from the chat's", async () => {
  const { v1, current, agentId } = await setup();
  const chatId = (await Chat.findOne({ agentId }).lean())!._id;
  expect((await Chat.findById(chatId).lean())!.sessionId ?? null).toBeNull();
  const first = await v1.post(`/agents/${agentId}/execute`, { message: 'one', chatId });
  expect(first.body).toMatchObject({ success: true, chatId, sessionId: `ses_${chatId}` });
  const second = await current.post(`/chats/${chatId}/messages`, { message: 'two' });
  expect(second.status).toBe(201);
  await until(
    () => Chat.findById(chatId).lean(),
    (c) => c?.activeExecutionId === null && c.turns === 2
  );
  expect((await Chat.findById(chatId).lean())!.history).toEqual([first.body.executionId, second.body.execution.id]);
});
