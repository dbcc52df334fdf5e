/**
 * Agent execution end to end: real api over HTTP, real Temporal dev server and worker (real workflow and
 * activities), real MongoDB-compatible server, and the official Anthropic SDK against a fake Anthropic server.
 */
import { randomBytes } from 'node:crypto';
import { Chat, Execution } from '../../../models';
import { bearer, buildOrg } from '../../helpers/factories';
import { useTestDatabase } from '../../helpers/mongo';
import { openSse, parseSse, type SseEvent } from '../../helpers/sse';
import { until } from '../../helpers/until';
import { v1As, v1Error } from '../../helpers/v1';
import { useExecutionStack } from '../../helpers/worker';
import { executionWorkflowId } from '../../../workflows/ids';
import { agentIdKey, organizationIdKey, workKindKey } from '../../../workflows/searchAttributes';

useTestDatabase();
const stack = useExecutionStack('executions', { DEFAULT_MODEL: 'claude-test' });

const as = (token: string): ReturnType<typeof v1As> => v1As(stack.t, token);

async function setup(systemPrompt = 'You are terse.'): Promise<{ token: string; agentId: string; orgId: string }> {
  const org = await buildOrg();
  const res = await as(org.apiToken).post('/agents', { name: 'Echo', systemPrompt });
  return { token: org.apiToken, agentId: res.body.id, orgId: org.organizationId };
}

const deltas = (events: SseEvent[]): string =>
  events
    .filter((e) => e.event === 'message')
    .map((e) => JSON.parse(e.data))
    .filter((d) => d.messageType === 'stream_event')
    .map((d) => d.delta.text)
    .join('');

async function waitForStatus(id: string, status: string, timeoutMs = 20_000): Promise<void> {
  const read = async () => (await Execution.findById(id).lean())?.status;
  await until(read, (s) => s === status, timeoutMs, 50, `execution ${id} ${status}`);
}

describe('POST /api/v1/agents/{id}/execute (JSON)', () => {
  it('answers {success, executionId, chatId, sessionId, result} and records the execution', async () => {
    const { token, agentId } = await setup();
    const res = await as(token).post(`/agents/${agentId}/execute`, { message: 'hello there' });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      success: true,
      executionId: expect.stringMatching(/^exec-\d+-[a-z0-9]+$/),
      chatId: expect.stringMatching(/^chat_/),
      sessionId: expect.stringMatching(/^ses_/),
      result: 'Echo: hello there',
    });
    const sent = stack.fake.requests.at(-1)!;
    expect(sent.system).toBe('You are terse.');
    expect(sent.model).toBe('claude-test');
    expect(sent.messages).toEqual([{ role: 'user', content: 'hello there' }]);

    const read = await as(token).get(`/executions/${res.body.executionId}`);
    expect(read.body.execution).toMatchObject({
      id: res.body.executionId,
      status: 'completed',
      agentId,
      chatId: res.body.chatId,
      sessionId: res.body.sessionId,
      input: { message: 'hello there' },
      result: 'Echo: hello there',
      error: null,
      provider: 'anthropic',
      model: 'claude-test',
      usage: { input_tokens: Math.ceil(('You are terse.'.length + 'hello there'.length) / 4), output_tokens: 5 },
      parentExecutionId: null,
      parentToolCallId: null,
      modelNote: null,
      taskId: null,
      rerunOf: null,
    });
    expect(read.body.execution.durationMs).toBeGreaterThanOrEqual(0);
    // Optional fields without a value are not stored, not even as null (models/Execution.ts): read as null above.
    const stored = await Execution.collection.findOne({ _id: res.body.executionId } as never);
    const optional = ['error', 'modelNote', 'parentExecutionId', 'parentToolCallId', 'taskId', 'rerunOf', 'jobId'];
    expect(Object.keys(stored!).filter((k) => optional.includes(k))).toEqual([]);
  });

  it('continues a conversation with sessionId + chatId: earlier turns reach the model in order', async () => {
    const { token, agentId } = await setup();
    const first = (await as(token).post(`/agents/${agentId}/execute`, { message: 'one' })).body;
    const second = await as(token).post(`/agents/${agentId}/execute`, {
      message: 'two',
      sessionId: first.sessionId,
      chatId: first.chatId,
    });
    expect(second.body).toMatchObject({ result: 'Echo: two', sessionId: first.sessionId, chatId: first.chatId });
    expect(stack.fake.requests.at(-1)!.messages).toEqual([
      { role: 'user', content: 'one' },
      { role: 'assistant', content: 'Echo: one' },
      { role: 'user', content: 'two' },
    ]);
    const third = await as(token).post(`/agents/${agentId}/execute`, { message: 'three', sessionId: first.sessionId });
    expect(third.body.chatId).toBe(first.chatId);
    expect(stack.fake.requests.at(-1)!.messages).toHaveLength(5);
  });

  it('a systemPrompt change applies to the next execution', async () => {
    const { token, agentId } = await setup('Old prompt');
    await as(token).post(`/agents/${agentId}/execute`, { message: 'a' });
    expect(stack.fake.requests.at(-1)!.system).toBe('Old prompt');
    await as(token).patch(`/agents/${agentId}`, { systemPrompt: 'New prompt' });
    await as(token).post(`/agents/${agentId}/execute`, { message: 'b' });
    expect(stack.fake.requests.at(-1)!.system).toBe('New prompt');
  });

  it('retries a transient provider error before any output, then succeeds', async () => {
    const { token, agentId } = await setup();
    const message = `flaky ${randomBytes(3).toString('hex')} [fail:529][fail-times:1]`;
    const before = stack.fake.requests.length;
    const res = await as(token).post(`/agents/${agentId}/execute`, { message });
    expect(res.status).toBe(200);
    expect(res.body.result).toBe(`Echo: ${message}`);
    expect(stack.fake.requests.length - before).toBe(2);
  });

  it('a permanent provider error: 500 Chat execution failed, execution failed', async () => {
    const { token, agentId } = await setup();
    const res = await as(token).post(`/agents/${agentId}/execute`, { message: 'bad [fail:400]' });
    expect(res.status).toBe(500);
    expect(res.body).toEqual(v1Error(500, 'Internal Server Error', 'Chat execution failed'));
    const [exec] = (await as(token).get(`/executions?agentId=${agentId}`)).body.executions;
    expect(exec.status).toBe('failed');
    expect(exec.error.message).toMatch(/400|invalid|error/i);
  });

  it('400 for a missing message; 404 for an unknown, archived or foreign agent; 404 for a foreign session', async () => {
    const { token, agentId } = await setup();
    expect((await as(token).post(`/agents/${agentId}/execute`, {})).body).toEqual(
      v1Error(400, 'Bad Request', 'Missing required field: message')
    );
    expect((await as(token).post(`/agents/${agentId}/execute`, { message: 'x', stream: 'yes' })).status).toBe(400);
    expect((await as(token).post('/agents/agt_none/execute', { message: 'x' })).body).toEqual(
      v1Error(404, 'Not Found', 'Agent not found')
    );
    const other = await setup();
    expect((await as(other.token).post(`/agents/${agentId}/execute`, { message: 'x' })).status).toBe(404);
    const mine = (await as(token).post(`/agents/${agentId}/execute`, { message: 'x' })).body;
    expect(
      (await as(other.token).post(`/agents/${other.agentId}/execute`, { message: 'x', sessionId: mine.sessionId })).body
    ).toEqual(v1Error(404, 'Not Found', 'Session not found'));
    expect(
      (await as(other.token).post(`/agents/${other.agentId}/execute`, { message: 'x', chatId: mine.chatId })).body
        .message
    ).toBe('Chat not found');
    await as(token).del(`/agents/${agentId}`);
    expect((await as(token).post(`/agents/${agentId}/execute`, { message: 'x' })).status).toBe(404);
  });

  it('a public agent of another organization is executable; the execution belongs to the caller', async () => {
    const owner = await buildOrg();
    const pub = (await as(owner.apiToken).post('/agents', { name: 'Pub', systemPrompt: 'p', visibility: 'public' }))
      .body.id;
    const caller = await setup();
    const res = await as(caller.token).post(`/agents/${pub}/execute`, { message: 'hi' });
    expect(res.status).toBe(200);
    expect((await as(caller.token).get(`/executions/${res.body.executionId}`)).status).toBe(200);
    expect((await as(owner.apiToken).get(`/executions/${res.body.executionId}`)).status).toBe(404);
  });
});

describe('POST /api/v1/agents/{id}/execute (stream)', () => {
  it('meta first, text deltas, the assistant message, result last; every event has an id', async () => {
    const { token, agentId } = await setup();
    const res = await stack.t.request
      .post(`/api/v1/agents/${agentId}/execute`)
      .set('Authorization', bearer(token))
      .send({ message: 'stream me please', stream: true })
      .buffer(true)
      .parse((r, cb) => {
        let text = '';
        r.setEncoding('utf8');
        r.on('data', (c: string) => (text += c));
        r.on('end', () => cb(null, text));
      });
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/event-stream/);
    const raw = res.body as string;
    expect(raw.startsWith(': connected\nretry: 2000\n\n')).toBe(true);
    const events = parseSse(raw);
    expect(events[0].event).toBe('meta');
    const meta = JSON.parse(events[0].data);
    expect(Object.keys(meta).sort()).toEqual(['chatId', 'executionId', 'sessionId']);
    expect(events.map((e) => Number(e.id))).toEqual(events.map((_, i) => i + 1));
    const last = events.at(-1)!;
    expect(last.event).toBe('result');
    const result = JSON.parse(last.data);
    expect(result).toEqual({
      sessionId: meta.sessionId,
      usage: { input_tokens: expect.any(Number), output_tokens: Math.ceil('Echo: stream me please'.length / 4) },
    });
    const assistant = events
      .filter((e) => e.event === 'message')
      .map((e) => JSON.parse(e.data))
      .find((d) => d.messageType === 'assistant');
    expect(assistant).toEqual({
      messageType: 'assistant',
      content: [{ type: 'text', text: 'Echo: stream me please' }],
    });
    expect(deltas(events)).toBe('Echo: stream me please');
    for (const e of events.filter((x) => x.event === 'message' && JSON.parse(x.data).messageType === 'stream_event')) {
      expect(JSON.parse(e.data)).toEqual({
        messageType: 'stream_event',
        delta: { type: 'text_delta', text: expect.any(String) },
      });
    }
    const exec = (await as(token).get(`/executions/${meta.executionId}`)).body.execution;
    expect(exec.result).toBe(deltas(events));
  });

  it('Accept: text/event-stream also streams; concatenated deltas equal the JSON result of the same prompt', async () => {
    const { token, agentId } = await setup();
    const live = await openSse(`${stack.base}/api/v1/agents/${agentId}/execute`, {
      method: 'POST',
      headers: { authorization: bearer(token) },
      body: { message: '[chunks:12]' },
    });
    await live.ended;
    const json = await as(token).post(`/agents/${agentId}/execute`, { message: '[chunks:12]' });
    expect(deltas(live.events)).toBe(json.body.result);
    expect(json.body.result).toBe(Array.from({ length: 12 }, (_, i) => `tok${i + 1} `).join(''));
  });

  it('an error after output started: error event, execution failed, partial text kept', async () => {
    const { token, agentId } = await setup();
    const live = await openSse(`${stack.base}/api/v1/agents/${agentId}/execute`, {
      method: 'POST',
      headers: { authorization: bearer(token) },
      body: { message: '[chunks:10][fail-after:3]', stream: true },
    });
    await live.ended;
    const last = live.events.at(-1)!;
    expect(last.event).toBe('error');
    expect(JSON.parse(last.data)).toEqual({ message: expect.any(String) });
    expect(deltas(live.events)).toBe('tok1 tok2 tok3 ');
    const meta = JSON.parse(live.events[0].data);
    const exec = (await as(token).get(`/executions/${meta.executionId}`)).body.execution;
    expect(exec).toMatchObject({ status: 'failed', result: 'tok1 tok2 tok3 ' });
  });
});

describe('cancel, join and resume', () => {
  it('cancels mid-stream within a second: the provider request is aborted, the stream ends with an error event', async () => {
    const { token, agentId } = await setup();
    const abortedBefore = stack.fake.aborted;
    const live = await openSse(`${stack.base}/api/v1/agents/${agentId}/execute`, {
      method: 'POST',
      headers: { authorization: bearer(token) },
      body: { message: '[chunks:100][slow:100]', stream: true },
    });
    await live.waitFor(3);
    const { executionId } = JSON.parse(live.events[0].data);
    const started = Date.now();
    const res = await as(token).post(`/executions/${executionId}/cancel`);
    expect(res.status).toBe(200);
    expect(res.body.execution.status).toBe('cancelled');
    expect(Date.now() - started).toBeLessThan(3000);
    await live.ended;
    expect(live.events.at(-1)).toMatchObject({
      event: 'error',
      data: JSON.stringify({ message: 'Execution cancelled' }),
    });
    expect(stack.fake.aborted).toBeGreaterThan(abortedBefore);
    const exec = (await as(token).get(`/executions/${executionId}`)).body.execution;
    expect(exec.result).toBe(deltas(live.events));
    expect(exec.result.length).toBeGreaterThan(0);

    const again = await as(token).post(`/executions/${executionId}/cancel`);
    expect(again.body).toEqual(v1Error(400, 'Bad Request', 'Only pending or running executions can be cancelled'));
    expect((await as(token).post('/executions/exec-1-none/cancel')).body).toEqual(
      v1Error(404, 'Not Found', 'Execution not found')
    );
  });

  it('joins with Last-Event-ID after a disconnect: no gap, no duplicate; the disconnect did not cancel', async () => {
    const { token, agentId } = await setup();
    const first = await openSse(`${stack.base}/api/v1/agents/${agentId}/execute`, {
      method: 'POST',
      headers: { authorization: bearer(token) },
      body: { message: '[chunks:30][slow:40]', stream: true },
    });
    await first.waitFor(3);
    first.close();
    const seen = first.events.slice();
    const { executionId } = JSON.parse(seen[0].data);
    const lastId = seen.at(-1)!.id!;
    const rest = await openSse(`${stack.base}/api/v1/executions/${executionId}/stream`, {
      headers: { authorization: bearer(token), 'last-event-id': lastId },
    });
    await rest.ended;
    const all = [...seen, ...rest.events];
    expect(all.map((e) => Number(e.id))).toEqual(all.map((_, i) => i + 1));
    expect(all.at(-1)!.event).toBe('result');
    expect(deltas(all)).toBe(Array.from({ length: 30 }, (_, i) => `tok${i + 1} `).join(''));
    const replay = await openSse(`${stack.base}/api/v1/executions/${executionId}/stream`, {
      headers: { authorization: bearer(token) },
    });
    await replay.ended;
    expect(replay.events.map((e) => e.id)).toEqual(all.map((e) => e.id));
    expect((await Execution.findById(executionId).lean())?.status).toBe('completed');
  });

  it('a join at or past the end of a finished execution answers 204 (read to the end); one before it gets the terminal event once', async () => {
    const { token, agentId } = await setup();
    const { executionId } = (await as(token).post(`/agents/${agentId}/execute`, { message: '[chunks:5]' })).body;
    const all = await openSse(`${stack.base}/api/v1/executions/${executionId}/stream`, {
      headers: { authorization: bearer(token) },
    });
    await all.ended;
    const terminal = all.events.at(-1)!;
    expect(terminal.event).toBe('result');
    const joins: Array<{ path: string; headers?: Record<string, string> }> = [
      { path: '', headers: { 'last-event-id': terminal.id! } },
      { path: '', headers: { 'last-event-id': '9999' } },
      { path: '', headers: { 'last-event-id': '1e308' } },
      { path: `?lastEventId=${terminal.id}` },
      { path: '?lastEventId=9999' },
    ];
    for (const join of joins) {
      const rest = await openSse(`${stack.base}/api/v1/executions/${executionId}/stream${join.path}`, {
        headers: { authorization: bearer(token), ...join.headers },
      });
      await rest.ended;
      // No Content: what stops a browser's EventSource from reconnecting; the terminal event is never sent twice.
      expect([rest.status, rest.raw]).toEqual([204, '']);
    }
    // One before the end: only the terminal event, once.
    const before = await openSse(`${stack.base}/api/v1/executions/${executionId}/stream`, {
      headers: { authorization: bearer(token), 'last-event-id': String(Number(terminal.id) - 1) },
    });
    await before.ended;
    expect(before.events).toEqual([terminal]);
  });

  it('a join past the head of a running execution ends when the execution ends', async () => {
    const { token, agentId } = await setup();
    const live = await openSse(`${stack.base}/api/v1/agents/${agentId}/execute`, {
      method: 'POST',
      headers: { authorization: bearer(token) },
      body: { message: '[chunks:20][slow:50]', stream: true },
    });
    await live.waitFor(2);
    const { executionId } = JSON.parse(live.events[0].data);
    const ahead = await openSse(`${stack.base}/api/v1/executions/${executionId}/stream?lastEventId=500`, {
      headers: { authorization: bearer(token) },
    });
    await Promise.all([live.ended, ahead.ended]);
    expect(live.events.at(-1)!.event).toBe('result');
    expect(ahead.events).toEqual([live.events.at(-1)]);
  });

  it('lastEventId (query or Last-Event-ID) must be a non-negative integer: 400 otherwise', async () => {
    const { token, agentId } = await setup();
    const { executionId } = (await as(token).post(`/agents/${agentId}/execute`, { message: 'x' })).body;
    const stream = `/executions/${executionId}/stream`;
    expect((await as(token).get(`${stream}?lastEventId[$gt]=0`)).body).toEqual(
      v1Error(400, 'Bad Request', 'Unknown field: lastEventId[$gt]')
    );
    expect((await as(token).get(`${stream}?lastEventId=abc`)).body).toEqual(
      v1Error(400, 'Bad Request', 'Invalid type for field: lastEventId (expected integer)')
    );
    expect((await as(token).get(`${stream}?lastEventId=-5`)).body).toEqual(
      v1Error(400, 'Bad Request', 'Field lastEventId must be >= 0')
    );
    for (const bad of ['1.5', '']) expect((await as(token).get(`${stream}?lastEventId=${bad}`)).status).toBe(400);
    expect((await as(token).get(`${stream}?lastEventId=1&lastEventId=2`)).status).toBe(400);
    for (const bad of ['abc', '-5', '1.5', '[object Object]']) {
      const res = await as(token).get(stream).set('Last-Event-ID', bad);
      expect(res.status).toBe(400);
      expect(res.body.message).toMatch(/Last-Event-ID/);
    }
  });

  it('a second message while the session runs is refused with 409; the session frees afterwards', async () => {
    const { token, agentId } = await setup();
    const live = await openSse(`${stack.base}/api/v1/agents/${agentId}/execute`, {
      method: 'POST',
      headers: { authorization: bearer(token) },
      body: { message: '[chunks:20][slow:30]', stream: true },
    });
    await live.waitFor(1);
    const { sessionId, chatId, executionId } = JSON.parse(live.events[0].data);
    const busy = await as(token).post(`/agents/${agentId}/execute`, { message: 'again', sessionId, chatId });
    expect(busy.status).toBe(409);
    expect(busy.body.message).toMatch(/^Session is busy/);
    await live.ended;
    await waitForStatus(executionId, 'completed');
    // The session is on the chat (commands/conversations.ts), freed by the finish's last write, after the outcome.
    await until(
      () => Chat.findById(chatId).lean(),
      (c) => c?.activeExecutionId === null
    );
    expect((await as(token).post(`/agents/${agentId}/execute`, { message: 'again', sessionId, chatId })).status).toBe(
      200
    );
  });
});

describe('GET /api/v1/executions', () => {
  it('lists an agent’s executions newest first, reads one, builds the tree; 404 across organizations', async () => {
    const { token, agentId } = await setup();
    const a = (await as(token).post(`/agents/${agentId}/execute`, { message: 'a' })).body.executionId;
    const b = (await as(token).post(`/agents/${agentId}/execute`, { message: 'b' })).body.executionId;
    const list = await as(token).get(`/executions?agentId=${agentId}`);
    expect(list.body.executions.map((e: { id: string }) => e.id)).toEqual([b, a]);
    expect((await as(token).get(`/executions?agentId=${agentId}&status=failed`)).body.executions).toEqual([]);
    expect((await as(token).get('/executions?status=done')).status).toBe(400);
    const tree = await as(token).get(`/executions/${a}/tree`);
    expect(tree.body).toMatchObject({ success: true, tree: { execution: { id: a }, children: [] } });
    const other = await setup();
    expect((await as(other.token).get(`/executions/${a}`)).body).toEqual(
      v1Error(404, 'Not Found', 'Execution not found')
    );
    expect((await as(other.token).get(`/executions?agentId=${agentId}`)).body.executions).toEqual([]);
  });
});

describe('operators', () => {
  it('one workflow per execution, tagged with organization, agent and kind, with a memo of ids only', async () => {
    const { token, agentId, orgId } = await setup();
    const { executionId } = (await as(token).post(`/agents/${agentId}/execute`, { message: 'tagged' })).body;
    // The answer comes with the outcome; the finish's last writes and the workflow's end follow it.
    const handle = stack.t.temporal.client.workflow.getHandle(executionWorkflowId(executionId));
    await handle.result();
    const description = await handle.describe();
    expect(description.type).toBe('agentExecution');
    expect(description.status.name).toBe('COMPLETED');
    expect(description.typedSearchAttributes.get(organizationIdKey)).toBe(orgId);
    expect(description.typedSearchAttributes.get(agentIdKey)).toBe(agentId);
    expect(description.typedSearchAttributes.get(workKindKey)).toBe('execution');
    const memo = await description.memo;
    expect(memo).toMatchObject({ agentId, model: 'anthropic:claude-test' });
    expect(JSON.stringify(memo)).not.toMatch(/tagged|Echo/);
  });
});

describe('client-library endpoints', () => {
  it('POST /api/agent/execute runs the same engine; GET /api/usage/organization/{orgId} totals the usage', async () => {
    const { token, agentId, orgId } = await setup();
    const res = await stack.t.request
      .post('/api/agent/execute')
      .set('Authorization', bearer(token))
      .send({ characterId: agentId, message: 'client' });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ success: true, result: 'Echo: client' });
    await as(token).post(`/agents/${agentId}/execute`, { message: 'v1' });
    const today = new Date().toISOString().slice(0, 10);
    const usage = await stack.t.request
      .get(`/api/usage/organization/${orgId}?period=daily&start=${today}&end=${today}`)
      .set('Authorization', bearer(token));
    expect(usage.status).toBe(200);
    // 4-character chunks: 'Echo: client' is 3, 'Echo: v1' is 2
    expect(usage.body.totals).toMatchObject({ executions: 2, completed: 2, output_tokens: 3 + 2 });
    expect(usage.body.periods).toHaveLength(1);
    expect(usage.body.periods[0]).toMatchObject({ start: today, executions: 2, agents: [{ agentId, executions: 2 }] });
    const weekly = await stack.t.request
      .get(`/api/usage/organization/${orgId}?period=weekly`)
      .set('Authorization', bearer(token));
    expect(weekly.body.totals.executions).toBe(2);
    const foreign = await buildOrg();
    expect(
      (
        await stack.t.request
          .get(`/api/usage/organization/${foreign.organizationId}`)
          .set('Authorization', bearer(token))
      ).status
    ).toBe(404);
    expect(
      (await stack.t.request.get(`/api/usage/organization/${orgId}?period=hourly`).set('Authorization', bearer(token)))
        .body
    ).toEqual({
      error: { code: 'validation_failed', message: 'Invalid period. Must be: daily, weekly, monthly' },
    });
  });
});
