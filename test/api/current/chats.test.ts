/**
 * Durable chats on the current surface, end to end: real api over HTTP (two instances), real Temporal dev server
 * and worker, the embedded database, and the official Anthropic SDK against the fake Anthropic server. Covers the
 * lifecycle (create → message → statuses → messages read → delete → 404), the validation of agent_id and
 * workspace_id, the chat options, 409 while a reply runs, and the chat event stream (replay, resume after
 * Last-Event-ID without gaps or duplicates, the last-N replay, heartbeats, one instance posting and another
 * streaming).
 */
import { Chat, ChatMessage, chatStreamId, Execution } from '../../../models';
import { appendEvents, readEvents } from '../../../commands/eventLog';
import { CHAT_REPLAY_EVENTS } from '../../../api/current/chats.schema';
import { useServedTestApp } from '../../helpers/app';
import { currentAs, currentError } from '../../helpers/current';
import { bearer, buildOrg } from '../../helpers/factories';
import { useTestDatabase } from '../../helpers/mongo';
import { openSse, type LiveStream, type SseEvent } from '../../helpers/sse';
import { until } from '../../helpers/until';
import { useExecutionStack } from '../../helpers/worker';

useTestDatabase();
const HEARTBEAT_MS = 300;
const stack = useExecutionStack('chats', { DEFAULT_MODEL: 'claude-test', SSE_HEARTBEAT_MS: String(HEARTBEAT_MS) });
// A second api instance on the same database and Temporal: any instance serves any chat's stream.
const other = useServedTestApp(() => stack.env);

interface Setup {
  token: string;
  organizationId: string;
  api: ReturnType<typeof currentAs>;
  agentId: string;
  /** The chat every agent gets when it is created (in the default workspace). */
  agentChatId: string;
  workspaceId: string;
}

async function setup(): Promise<Setup> {
  const org = await buildOrg();
  const api = currentAs(stack.t, org.serviceToken);
  const agent = await api.post('/agents', { name: 'Chatty', system_prompt: 'Be brief.' });
  expect(agent.status).toBe(201);
  const ws = await api.post('/workspaces', { name: 'Chats' });
  expect(ws.status).toBe(201);
  return {
    token: org.serviceToken,
    organizationId: org.organizationId,
    api,
    agentId: agent.body.agent.id,
    agentChatId: agent.body.agent.chat_id,
    workspaceId: ws.body.workspace.id,
  };
}

async function newChat(s: Setup): Promise<string> {
  const res = await s.api.post('/chats', { agent_id: s.agentId, workspace_id: s.workspaceId });
  expect(res.status).toBe(201);
  return res.body.chat.id;
}

function events(s: Setup, chatId: string, on = stack.base, lastEventId?: string): Promise<LiveStream> {
  return openSse(`${on}/api/chats/${chatId}/events`, {
    headers: { authorization: bearer(s.token), ...(lastEventId ? { 'last-event-id': lastEventId } : {}) },
  });
}

/** Waits until the stream holds a `chat.status` event with this status after `after` events. */
async function waitForStatus(stream: LiveStream, status: string, after = 0): Promise<void> {
  const deadline = Date.now() + 30_000;
  const found = (): boolean =>
    stream.events
      .slice(after)
      .some((e) => e.event === 'chat.status' && (JSON.parse(e.data) as { status: string }).status === status);
  while (!found()) {
    if (Date.now() > deadline) throw new Error(`no chat.status ${status}; got:\n${stream.raw}`);
    await stream.waitFor(stream.events.length + 1, 30_000);
  }
}

const names = (list: SseEvent[]): string[] => list.map((e) => e.event!);
const ids = (list: SseEvent[]): number[] => list.map((e) => Number(e.id));
const deltaText = (list: SseEvent[]): string =>
  list
    .filter((e) => e.event === 'message.delta')
    .map((e) => (JSON.parse(e.data) as { text: string }).text)
    .join('');
const summary = (list: SseEvent[]): string[] => list.map((e) => `${e.id} ${e.event} ${e.data}`);
const chunks = (n: number): string => Array.from({ length: n }, (_, i) => `tok${i + 1} `).join('');

async function waitForExecution(id: string, status: string): Promise<void> {
  await until(
    async () => (await Execution.findById(id).lean())?.status,
    (s) => s === status,
    30_000,
    50
  );
}

describe('chat lifecycle', () => {
  it('create → message → working → done → messages and work read → delete → 404', async () => {
    const s = await setup();
    const created = await s.api.post('/chats', { agent_id: s.agentId, workspace_id: s.workspaceId });
    expect(created.status).toBe(201);
    expect(created.body.chat).toMatchObject({
      organization_id: s.organizationId,
      workspace_id: s.workspaceId,
      agent_id: s.agentId,
      title: 'Chatty',
      status: 'standby',
      options: { model: null },
      closed: false,
    });
    const chatId = created.body.chat.id as string;

    const stream = await events(s, chatId);
    expect(stream.status).toBe(200);
    expect(stream.headers['content-type']).toMatch(/^text\/event-stream/);
    const sent = await s.api.post(`/chats/${chatId}/messages`, { message: 'hi [chunks:5]' });
    expect(sent.status).toBe(201);
    expect(sent.body).toMatchObject({
      message: { role: 'user', content: 'hi [chunks:5]', position: 2 },
      execution: { id: expect.stringMatching(/^exec-/), status: 'pending' },
    });
    await waitForStatus(stream, 'done');
    expect(stream.raw).toMatch(/^: connected\nretry: 2000\n\n/);
    const list = stream.events;
    expect(ids(list)).toEqual(list.map((_, i) => i + 1));
    expect(names(list)[0]).toBe('message.created');
    expect(JSON.parse(list[0].data)).toEqual({
      chat_id: chatId,
      execution_id: sent.body.execution.id,
      message: { id: `${sent.body.execution.id}:user`, role: 'user', content: 'hi [chunks:5]', position: 2 },
    });
    expect(names(list)[1]).toBe('chat.status');
    expect(JSON.parse(list[1].data)).toMatchObject({ status: 'working', error: null });
    expect(names(list).slice(-2)).toEqual(['message.completed', 'chat.status']);
    expect(
      names(list)
        .slice(2, -2)
        .every((n) => n === 'message.delta')
    ).toBe(true);
    expect(deltaText(list)).toBe(chunks(5));
    expect(JSON.parse(list.at(-2)!.data).message).toEqual({
      id: `${sent.body.execution.id}:assistant`,
      role: 'assistant',
      content: chunks(5),
      position: 3,
    });
    stream.close();

    const read = await s.api.get(`/chats/${chatId}/messages`);
    expect(read.status).toBe(200);
    expect(read.body.chat.status).toBe('done');
    expect(read.body.messages.map((m: { role: string; content: string }) => [m.role, m.content])).toEqual([
      ['user', 'hi [chunks:5]'],
      ['assistant', chunks(5)],
    ]);
    expect(read.body.work).toEqual({
      executions: [
        expect.objectContaining({ id: sent.body.execution.id, kind: 'execution', status: 'completed', error: null }),
      ],
      jobs: [],
    });

    // A second turn continues the conversation; the messages page in order.
    const second = await s.api.post(`/chats/${chatId}/messages`, { message: 'again' });
    expect(second.status).toBe(201);
    expect(second.body.message.position).toBe(4);
    await waitForExecution(second.body.execution.id, 'completed');
    expect(stack.fake.requests.at(-1)!.messages).toEqual([
      { role: 'user', content: 'hi [chunks:5]' },
      { role: 'assistant', content: chunks(5) },
      { role: 'user', content: 'again' },
    ]);
    const page1 = await s.api.get(`/chats/${chatId}/messages?limit=3`);
    expect(page1.body.messages.map((m: { position: number }) => m.position)).toEqual([2, 3, 4]);
    expect(page1.body.next_cursor).toBe('4');
    const page2 = await s.api.get(`/chats/${chatId}/messages?limit=3&cursor=4`);
    expect(page2.body.messages.map((m: { content: string }) => m.content)).toEqual(['Echo: again']);
    expect(page2.body.next_cursor).toBeNull();

    const listed = await s.api.get(`/chats?agent_id=${s.agentId}`);
    expect(listed.body.chats.map((c: { id: string }) => c.id)).toEqual([chatId, s.agentChatId]);

    const deleted = await s.api.del(`/chats/${chatId}`);
    expect(deleted.status).toBe(200);
    expect(deleted.body).toEqual({ id: chatId, deleted: true, cancelled_execution_id: null });
    for (const res of [
      await s.api.get(`/chats/${chatId}/messages`),
      await s.api.post(`/chats/${chatId}/messages`, { message: 'still there?' }),
      await s.api.get(`/chats/${chatId}/events`),
      await s.api.patch(`/chats/${chatId}/options`, { title: 'x' }),
      await s.api.del(`/chats/${chatId}`),
    ]) {
      expect(res.status).toBe(404);
      expect(res.body).toEqual(currentError('not_found', 'Chat not found'));
    }
    expect((await s.api.get(`/chats?agent_id=${s.agentId}`)).body.chats.map((c: { id: string }) => c.id)).toEqual([
      s.agentChatId,
    ]);
  });

  it('messages are read from the executions; a chat recorded before (chat_messages documents) reads the same', async () => {
    const s = await setup();
    const chatId = (await s.api.post('/chats', { agent_id: s.agentId, workspace_id: s.workspaceId })).body.chat
      .id as string;
    const sent = await s.api.post(`/chats/${chatId}/messages`, { message: 'hello [chunks:2]' });
    await waitForExecution(sent.body.execution.id, 'completed');
    const execId = sent.body.execution.id as string;
    // No documents of their own: the execution record holds both (commands/chatMessageReads.ts).
    expect(await ChatMessage.exists({ _id: `${execId}:user` })).toBeNull();
    expect(await ChatMessage.exists({ _id: `${execId}:assistant` })).toBeNull();
    const read = await s.api.get(`/chats/${chatId}/messages`);
    expect(read.body.messages.map((m: { id: string; role: string }) => [m.id, m.role])).toEqual([
      [`${execId}:user`, 'user'],
      [`${execId}:assistant`, 'assistant'],
    ]);
    // Older versions wrote both messages as documents (the reply at the finish): read once, the same.
    const exec = (await Execution.findById(execId).lean())!;
    const stored = (role: string, content: string, position: number, at: Date) => ({
      _id: `${execId}:${role}`,
      organizationId: exec.organizationId,
      chatId,
      sessionId: exec.sessionId,
      executionId: execId,
      role,
      content,
      position,
      createdAt: at,
      updatedAt: at,
    });
    await ChatMessage.collection.insertOne(stored('user', 'hello [chunks:2]', 2, exec.createdAt) as never);
    expect((await s.api.get(`/chats/${chatId}/messages`)).body).toEqual(read.body);
    await ChatMessage.collection.insertOne(stored('assistant', exec.result!, 3, exec.completedAt!) as never);
    expect((await s.api.get(`/chats/${chatId}/messages`)).body).toEqual(read.body);
    // A page that starts after the user message holds the reply (its turn's other position).
    const after = await s.api.get(`/chats/${chatId}/messages?cursor=2`);
    expect(after.body.messages.map((m: { id: string }) => m.id)).toEqual([`${execId}:assistant`]);
    await ChatMessage.deleteMany({ chatId });
    expect((await s.api.get(`/chats/${chatId}/messages?cursor=2`)).body).toEqual(after.body);
  });

  it('a second message while a reply runs is 409; deleting the chat cancels the reply', async () => {
    const s = await setup();
    const chatId = await newChat(s);
    const first = await s.api.post(`/chats/${chatId}/messages`, { message: 'long [chunks:200][slow:50]' });
    expect(first.status).toBe(201);
    const busy = await s.api.post(`/chats/${chatId}/messages`, { message: 'me too' });
    expect(busy.status).toBe(409);
    expect(busy.body.error.code).toBe('conflict');
    expect(busy.body.error.message).toMatch(/^Session is busy/);

    await waitForExecution(first.body.execution.id, 'running');
    const deleted = await s.api.del(`/chats/${chatId}`);
    expect(deleted.body).toEqual({ id: chatId, deleted: true, cancelled_execution_id: first.body.execution.id });
    await waitForExecution(first.body.execution.id, 'cancelled');
    // The chat stream still records how the turn ended.
    const deadline = Date.now() + 10_000;
    let last: { event: string; data: Record<string, unknown> } | undefined;
    while (Date.now() < deadline) {
      last = (await readEvents(chatStreamId(chatId))).at(-1);
      if (last?.event === 'chat.status' && last.data.status === 'standby') break;
      await new Promise((r) => setTimeout(r, 50));
    }
    expect(last).toMatchObject({
      event: 'chat.status',
      data: { status: 'standby', error: { message: 'Execution cancelled' } },
    });
  });

  it('of messages sent at once to an idle chat exactly one starts; the others are 409', async () => {
    const s = await setup();
    const chatId = await newChat(s);
    const answers = await Promise.all(
      Array.from({ length: 6 }, (_, i) => s.api.post(`/chats/${chatId}/messages`, { message: `race ${i} [chunks:3]` }))
    );
    expect(answers.map((r) => r.status).sort()).toEqual([201, 409, 409, 409, 409, 409]);
    const started = answers.find((r) => r.status === 201)!.body.execution.id as string;
    await waitForExecution(started, 'completed');
    expect(await Execution.countDocuments({ chatId })).toBe(1);
    // The session is free again: the next message starts the second turn.
    const next = await s.api.post(`/chats/${chatId}/messages`, { message: 'after the race' });
    expect([next.status, next.body.message?.position]).toEqual([201, 4]);
  });

  it('the chat an agent is created with takes messages too (its session is made on the first one)', async () => {
    const s = await setup();
    const sent = await s.api.post(`/chats/${s.agentChatId}/messages`, { message: 'first [chunks:2]' });
    expect(sent.status).toBe(201);
    await waitForExecution(sent.body.execution.id, 'completed');
    // The chat's status follows the outcome: the finish writes the outcome, then frees the chat with its status.
    const read = await until(
      () => s.api.get(`/chats/${s.agentChatId}/messages`).then((r) => r),
      (r) => r.body.chat?.status !== 'working'
    );
    expect(read.body.chat).toMatchObject({ session_id: `ses_${s.agentChatId}`, status: 'done' });
    expect(read.body.messages.map((m: { content: string }) => m.content)).toEqual(['first [chunks:2]', chunks(2)]);
  });

  it('a message retried with the same Idempotency-Key starts one execution', async () => {
    const s = await setup();
    const chatId = await newChat(s);
    const send = () =>
      s.api.post(`/chats/${chatId}/messages`, { message: 'once [chunks:2]' }).set('Idempotency-Key', 'msg-1');
    const first = await send();
    const again = await send();
    expect(first.status).toBe(201);
    expect(again.status).toBe(201);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.body).toEqual(first.body);
    await waitForExecution(first.body.execution.id, 'completed');
    expect(await Execution.countDocuments({ chatId })).toBe(1);
  });

  it('a failed reply ends with chat.status error', async () => {
    const s = await setup();
    const chatId = await newChat(s);
    const stream = await events(s, chatId);
    await s.api.post(`/chats/${chatId}/messages`, { message: 'bad [fail:400]' });
    await waitForStatus(stream, 'error');
    expect(JSON.parse(stream.events.at(-1)!.data).error.message).toMatch(/^The model provider rejected the request/);
    stream.close();
    expect((await s.api.get(`/chats/${chatId}/messages`)).body.chat.status).toBe('error');
  });
});

describe('POST /api/chats validation', () => {
  it('agent_id and workspace_id: missing or unknown → 400 naming the field', async () => {
    const s = await setup();
    const stranger = await setup();
    const cases: Array<[object, string]> = [
      [{ workspace_id: s.workspaceId }, 'Missing required field: agent_id'],
      [{ agent_id: '', workspace_id: s.workspaceId }, 'Missing required field: agent_id'],
      [{ agent_id: 'agt_nope', workspace_id: s.workspaceId }, 'Invalid agent_id: agent not found'],
      [{ agent_id: stranger.agentId, workspace_id: s.workspaceId }, 'Invalid agent_id: agent not found'],
      [{ agent_id: s.agentId }, 'Missing required field: workspace_id'],
      [{ agent_id: s.agentId, workspace_id: 'spc_nope' }, 'Invalid workspace_id: workspace not found'],
      [{ agent_id: s.agentId, workspace_id: stranger.workspaceId }, 'Invalid workspace_id: workspace not found'],
      [{ agent_id: s.agentId, workspace_id: s.workspaceId, extra: 1 }, 'Unknown field: extra'],
      [{ agent_id: 5, workspace_id: s.workspaceId }, 'Invalid type for field: agent_id (expected string)'],
    ];
    for (const [body, message] of cases) {
      const res = await s.api.post('/chats', body);
      expect([res.status, res.body]).toEqual([400, currentError('validation_failed', message)]);
    }
  });

  it('without workspace_id the caller’s active workspace is used', async () => {
    const s = await setup();
    expect((await s.api.post(`/workspaces/${s.workspaceId}/select`)).status).toBe(200);
    const res = await s.api.post('/chats', { agent_id: s.agentId, title: 'Mine' });
    expect(res.status).toBe(201);
    expect(res.body.chat).toMatchObject({ workspace_id: s.workspaceId, title: 'Mine' });
  });
});

describe('GET /api/chats', () => {
  it('filters by status, agent and workspace, pages with next_cursor, refuses an unknown status', async () => {
    const s = await setup();
    const otherWs = (await s.api.post('/workspaces', { name: 'Other' })).body.workspace.id;
    const a = await newChat(s);
    const b = await newChat(s);
    const c = (await s.api.post('/chats', { agent_id: s.agentId, workspace_id: otherWs })).body.chat.id;
    const idsOf = (res: { body: { chats: Array<{ id: string }> } }): string[] => res.body.chats.map((x) => x.id);
    expect(idsOf(await s.api.get(`/chats?workspace_id=${s.workspaceId}`))).toEqual([b, a]);
    expect(idsOf(await s.api.get(`/chats?workspace_id=${otherWs}`))).toEqual([c]);
    expect(idsOf(await s.api.get(`/chats?agent_id=${s.agentId}&status=standby`))).toEqual([c, b, a, s.agentChatId]);
    expect(idsOf(await s.api.get(`/chats?agent_id=${s.agentId}&status=done`))).toEqual([]);
    expect(idsOf(await s.api.get(`/chats?agent_id=agt_none`))).toEqual([]);
    const first = await s.api.get(`/chats?agent_id=${s.agentId}&limit=3`);
    expect(idsOf(first)).toEqual([c, b, a]);
    const rest = await s.api.get(`/chats?agent_id=${s.agentId}&limit=3&cursor=${first.body.next_cursor}`);
    expect([idsOf(rest), rest.body.next_cursor]).toEqual([[s.agentChatId], null]);
    const bad = await s.api.get('/chats?status=busy');
    expect(bad.status).toBe(400);
    expect(bad.body.error.code).toBe('validation_failed');
  });
});

describe('PATCH /api/chats/{id}/options', () => {
  it('sets the model of the chat’s next executions and the title; null returns to the agent’s model', async () => {
    const s = await setup();
    const chatId = await newChat(s);
    const set = await s.api.patch(`/chats/${chatId}/options`, { model: 'builtin', title: 'Renamed' });
    expect(set.status).toBe(200);
    expect(set.body.chat).toMatchObject({ title: 'Renamed', options: { model: 'builtin' } });
    const sent = await s.api.post(`/chats/${chatId}/messages`, { message: 'offline please' });
    await waitForExecution(sent.body.execution.id, 'completed');
    const work = (await s.api.get(`/chats/${chatId}/messages`)).body.work.executions;
    expect(work[0]).toMatchObject({ provider: 'builtin', model: 'builtin' });

    const reset = await s.api.patch(`/chats/${chatId}/options`, { model: null });
    expect(reset.body.chat.options).toEqual({ model: null });
    const next = await s.api.post(`/chats/${chatId}/messages`, { message: 'online again' });
    await waitForExecution(next.body.execution.id, 'completed');
    const work2 = (await s.api.get(`/chats/${chatId}/messages`)).body.work.executions;
    expect(work2[1]).toMatchObject({ provider: 'anthropic', model: 'claude-test' });

    const unknown = await s.api.patch(`/chats/${chatId}/options`, { temperature: 1 });
    expect([unknown.status, unknown.body]).toEqual([
      400,
      currentError('validation_failed', 'Unknown field: temperature'),
    ]);
  });
});

describe('GET /api/chats/{id}/events', () => {
  it('resumes after Last-Event-ID with no gap and no duplicate, on either api instance', async () => {
    const s = await setup();
    const chatId = await newChat(s);
    const live = await events(s, chatId);
    await s.api.post(`/chats/${chatId}/messages`, { message: 'one [chunks:8][slow:20]' });
    await waitForStatus(live, 'done');
    const turn1 = live.events.length;
    await s.api.post(`/chats/${chatId}/messages`, { message: 'two [chunks:8][slow:20]' });
    await waitForStatus(live, 'done', turn1);
    live.close();
    const all = live.events;
    expect(ids(all)).toEqual(all.map((_, i) => i + 1));
    expect(names(all).filter((n) => n === 'message.created')).toHaveLength(2);

    for (const [on, cut] of [
      [stack.base, 3],
      [other.base, turn1],
      [other.base, all.length - 1],
    ] as const) {
      const resumed = await events(s, chatId, on, String(cut));
      await resumed.waitFor(all.length - cut);
      // Nothing more arrives: heartbeats only.
      await new Promise((r) => setTimeout(r, HEARTBEAT_MS * 2));
      resumed.close();
      expect(summary(resumed.events)).toEqual(summary(all.slice(cut)));
    }
    const fromStart = await events(s, chatId, other.base, '0');
    await fromStart.waitFor(all.length);
    fromStart.close();
    expect(summary(fromStart.events)).toEqual(summary(all));

    const bad = await s.api.get(`/chats/${chatId}/events`).set('Last-Event-ID', 'abc');
    expect(bad.status).toBe(400);
  });

  it('without Last-Event-ID replays the last 100 events, then live ones', async () => {
    const s = await setup();
    const chatId = await newChat(s);
    // A long history (the same log the activities write), then a live turn after it.
    const history = 130;
    await appendEvents(
      chatStreamId(chatId),
      Array.from({ length: history }, (_, i) => ({
        seq: i + 1,
        event: 'chat.status',
        data: { chat_id: chatId, execution_id: 'exec-0-old', status: 'done', error: null },
      }))
    );
    await Chat.updateOne({ _id: chatId }, { $set: { chatStreamSeq: history } });
    const stream = await events(s, chatId);
    await stream.waitFor(CHAT_REPLAY_EVENTS);
    expect(ids(stream.events)).toEqual(
      Array.from({ length: CHAT_REPLAY_EVENTS }, (_, i) => history - CHAT_REPLAY_EVENTS + i + 1)
    );
    await s.api.post(`/chats/${chatId}/messages`, { message: 'after [chunks:3]' });
    await waitForStatus(stream, 'working', CHAT_REPLAY_EVENTS);
    await waitForStatus(stream, 'done', CHAT_REPLAY_EVENTS);
    stream.close();
    const liveEvents = stream.events.slice(CHAT_REPLAY_EVENTS);
    expect(ids(liveEvents)).toEqual(liveEvents.map((_, i) => history + i + 1));
    expect(names(liveEvents)[0]).toBe('message.created');
  });

  it('sends `: heartbeat` comments at the configured interval', async () => {
    const s = await setup();
    const chatId = await newChat(s);
    const stream = await events(s, chatId);
    const deadline = Date.now() + 10_000;
    while (!stream.raw.includes(': heartbeat\n\n') && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 50));
    }
    stream.close();
    expect(stream.raw).toContain(': heartbeat\n\n');
    expect(stream.events).toEqual([]);
  });

  it('an open stream of a deleted chat ends, and reconnecting gets 404', async () => {
    const s = await setup();
    const chatId = await newChat(s);
    const stream = await events(s, chatId);
    const deleted = await s.api.del(`/chats/${chatId}`);
    expect(deleted.status).toBe(200);
    let ended = false;
    void stream.ended.then(() => (ended = true));
    const deadline = Date.now() + 10_000;
    while (!ended && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    stream.close();
    expect(ended).toBe(true);
    const again = await events(s, chatId);
    again.close();
    expect(again.status).toBe(404);
  });

  it('a message posted through one api instance streams live through another', async () => {
    const s = await setup();
    const chatId = await newChat(s);
    const onOther = await events(s, chatId, other.base);
    const onFirst = await events(s, chatId, stack.base);
    const sent = await currentAs(other.t, s.token).post(`/chats/${chatId}/messages`, {
      message: 'across [chunks:30][slow:20]',
    });
    expect(sent.status).toBe(201);
    await Promise.all([waitForStatus(onOther, 'done'), waitForStatus(onFirst, 'done')]);
    onOther.close();
    onFirst.close();
    expect(deltaText(onOther.events)).toBe(chunks(30));
    expect(ids(onOther.events)).toEqual(onOther.events.map((_, i) => i + 1));
    expect(summary(onOther.events)).toEqual(summary(onFirst.events));
  });

  it('the same event names and ids are in the durable log the stream reads', async () => {
    const s = await setup();
    const chatId = await newChat(s);
    const sent = await s.api.post(`/chats/${chatId}/messages`, { message: 'logged [chunks:4]' });
    await waitForExecution(sent.body.execution.id, 'completed');
    // The log is read once the chat has left `working`: the execution's first event is mirrored as a `chat.status`
    // (`working`) too, and the finish mirrors the rest after the outcome the wait above saw.
    const logged = await until(
      () => readEvents(chatStreamId(chatId)),
      (l) => {
        const last = l.at(-1);
        return last?.event === 'chat.status' && (last.data as { status?: string }).status !== 'working';
      },
      10_000,
      50,
      "the chat's status after the reply"
    );
    const replay = await events(s, chatId, stack.base, '0');
    await replay.waitFor(logged.length);
    replay.close();
    expect(replay.events.map((e) => `${e.id} ${e.event}`)).toEqual(logged.map((e) => `${e.seq} ${e.event}`));
  });
});
