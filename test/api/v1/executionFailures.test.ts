/**
 * Executions that fail: a model that goes silent (idle timeout), an execution past its deadline, a provider that
 * rejects the request. Each ends with a terminal `error` event in the service's own words, frees its session, and
 * leaves the provider's and the engine's own words to the logs. Real api over HTTP, real Temporal and worker, the
 * official Anthropic SDK against the fake Anthropic server; short limits (idle 1 s, deadline 8 s) keep it fast.
 */
import { randomBytes } from 'node:crypto';
import { Chat, Execution } from '../../../models';
import { bearer, buildOrg } from '../../helpers/factories';
import { capturingLogger } from '../../helpers/env';
import { useTestDatabase } from '../../helpers/mongo';
import { openSse, type LiveStream, type SseEvent } from '../../helpers/sse';
import { v1As, v1Error } from '../../helpers/v1';
import { until } from '../../helpers/until';
import { useExecutionStack } from '../../helpers/worker';

useTestDatabase();
/** The worker's logger, and its log lines (JSON). */
const { logger: workerLogger, lines: logLines } = capturingLogger('worker', 'info');

// Room for the idle timeout (1 s), the retry and its second idle timeout before the deadline, on a loaded machine too
// (with 5 s, a machine at load 25 once let only one attempt start).
const DEADLINE_SECONDS = 8;

const stack = useExecutionStack(
  'failures',
  {
    DEFAULT_MODEL: 'claude-test',
    MODEL_IDLE_TIMEOUT_SECONDS: '1',
    EXECUTION_DEADLINE_SECONDS: String(DEADLINE_SECONDS),
  },
  { workerLogger }
);

const as = (token: string): ReturnType<typeof v1As> => v1As(stack.t, token);

async function setup(): Promise<{ token: string; agentId: string }> {
  const org = await buildOrg();
  const res = await as(org.apiToken).post('/agents', { name: 'Quiet', systemPrompt: 'p' });
  return { token: org.apiToken, agentId: res.body.id };
}

async function execute(token: string, agentId: string, message: string): Promise<LiveStream> {
  return openSse(`${stack.base}/api/v1/agents/${agentId}/execute`, {
    method: 'POST',
    headers: { authorization: bearer(token) },
    body: { message, stream: true },
  });
}

const deltas = (events: SseEvent[]): string =>
  events
    .filter((e) => e.event === 'message')
    .map((e) => JSON.parse(e.data))
    .filter((d) => d.messageType === 'stream_event')
    .map((d) => d.delta.text)
    .join('');

describe('a silent model', () => {
  it('silent after message_start: each attempt fails on the idle timeout; the deadline ends the execution and frees its session', async () => {
    const { token, agentId } = await setup();
    const message = `quiet ${randomBytes(3).toString('hex')} [hang]`;
    const live = await execute(token, agentId, message);
    await live.ended;
    const { executionId, sessionId, chatId } = JSON.parse(live.events[0].data);
    const expected = `The execution did not finish within its time limit of ${DEADLINE_SECONDS} s`;
    expect(live.events.at(-1)).toMatchObject({ event: 'error', data: JSON.stringify({ message: expected }) });
    const exec = (await as(token).get(`/executions/${executionId}`)).body.execution;
    expect(exec).toMatchObject({ status: 'failed', error: { code: 'deadline_exceeded', message: expected } });
    // The idle timeout failed the first attempt and it was retried (a second request) before the deadline.
    expect(stack.fake.requests.filter((r) => r.messages?.at(-1)?.content === message).length).toBeGreaterThanOrEqual(2);
    // The session is free: the next message is answered.
    // The session is on the chat (commands/conversations.ts), freed by the finish's last write, after the outcome.
    await until(
      () => Chat.findById(chatId).lean(),
      (c) => c?.activeExecutionId === null
    );
    const next = await as(token).post(`/agents/${agentId}/execute`, { message: 'again', sessionId, chatId });
    expect(next.status).toBe(200);
    expect(next.body.result).toBe('Echo: again');
  }, 60_000);

  it('silent in the middle of the reply: the attempt fails with "The model provider did not respond", text kept', async () => {
    const { token, agentId } = await setup();
    const message = `[chunks:10][hang-after:3] ${randomBytes(3).toString('hex')}`;
    const live = await execute(token, agentId, message);
    await live.ended;
    expect(live.events.at(-1)).toMatchObject({
      event: 'error',
      data: JSON.stringify({ message: 'The model provider did not respond' }),
    });
    expect(deltas(live.events)).toBe('tok1 tok2 tok3 ');
    const { executionId } = JSON.parse(live.events[0].data);
    expect(await Execution.findById(executionId).lean()).toMatchObject({
      status: 'failed',
      result: 'tok1 tok2 tok3 ',
      error: { code: 'provider_timeout', message: 'The model provider did not respond' },
    });
    // Output had been delivered: no retry (it would repeat or reorder text).
    expect(stack.fake.requests.filter((r) => r.messages?.at(-1)?.content === message)).toHaveLength(1);
    expect(logLines).toContainEqual(
      expect.objectContaining({ executionId, msg: 'model provider went silent', idleMs: 1000 })
    );
  }, 60_000);

  it('a model that keeps talking past the deadline is stopped there; the session is freed', async () => {
    const { token, agentId } = await setup();
    const live = await execute(token, agentId, '[chunks:600][slow:50]');
    await live.ended;
    const { executionId, chatId } = JSON.parse(live.events[0].data);
    expect(live.events.at(-1)).toMatchObject({
      event: 'error',
      data: JSON.stringify({ message: `The execution did not finish within its time limit of ${DEADLINE_SECONDS} s` }),
    });
    const exec = await Execution.findById(executionId).lean();
    expect(exec).toMatchObject({ status: 'failed', result: deltas(live.events) });
    expect(exec!.result!.length).toBeGreaterThan(0);
    // The session is on the chat (commands/conversations.ts), freed by the finish's last write, after the outcome.
    await until(
      () => Chat.findById(chatId).lean(),
      (c) => c?.activeExecutionId === null
    );
    const ids = live.events.map((e) => Number(e.id));
    expect(ids).toEqual(ids.map((_, i) => i + 1));
  }, 60_000);
});

describe('the service’s own words', () => {
  it('a provider rejection: "The model provider rejected the request: <its message>", never its raw body', async () => {
    const { token, agentId } = await setup();
    const live = await execute(token, agentId, 'bad [fail:400]');
    await live.ended;
    const expected = 'The model provider rejected the request: Injected failure 400';
    expect(live.events.at(-1)).toMatchObject({ event: 'error', data: JSON.stringify({ message: expected }) });
    const { executionId } = JSON.parse(live.events[0].data);
    const exec = (await as(token).get(`/executions/${executionId}`)).body.execution;
    expect(exec.error).toEqual({ code: 'provider_rejected', message: expected });
    // The JSON reply keeps the spec's message.
    const json = await as(token).post(`/agents/${agentId}/execute`, { message: 'bad [fail:400]' });
    expect(json.body).toEqual(v1Error(500, 'Internal Server Error', 'Chat execution failed'));
    // The provider's own account, raw body included, is in the worker's log under the execution id.
    const logged = logLines.find((l) => l.executionId === executionId && l.msg === 'model call failed');
    expect(logged).toMatchObject({ status: 400, transient: false });
    expect(String(logged!.providerError)).toContain('"type":"api_error"');
  }, 60_000);
});
