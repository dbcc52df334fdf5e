/**
 * Faults in a running `npm run dev` (its own servers: a temporary data directory and free ports, never the
 * servers the rest of the suite shares; one service process and one worker-only process, WORKER_PROCESSES=1): each
 * part is killed with SIGKILL, the supervisor brings it back, and a client sees what docs/operations.md "When a part crashes"
 * promises. Worker-only process: the event stream goes on and ends with `result`, gap-free and whole. Service process
 * (it runs the reply it started eagerly): the reply goes on in another process, and the client resumes after
 * `Last-Event-ID`. Temporal, FerretDB, PostgreSQL: every request answers 503 with `Retry-After` within 5 s while it
 * is down, and the execution that was running finishes once it is back.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startFakeAnthropic, type FakeAnthropic } from '../../scripts/fakes/anthropic';
import { serviceNodeArgs } from '../../scripts/lib/serviceHeap';
import { freePort } from '../../scripts/servers/launch';
import { childTestEnv } from '../helpers/env';
import { findProcess, killHard, PARTS, runScript, spawnScript, type Spawned } from '../helpers/processes';
import { openSse, type LiveStream, type SseEvent } from '../helpers/sse';

jest.setTimeout(120_000);

/**
 * The contract: while a dependency is down, a request answers 503 within 5 s. The stack runs with
 * DEPENDENCY_TIMEOUT_MS=3000 (the default), so a request waits at most about 3 s; the 5 s bound is the contract
 * itself, 2 s above what the service needs.
 */
const OUTAGE_ANSWER_MS = 5000;
/**
 * /readyz answers within its deadline (2 s; api/health.ts READY_DEADLINE_MS); 1 s of slack for a busy machine.
 */
const READY_ANSWER_MS = 3000;
/**
 * Restart wait of the stack: long enough that a killed server is still down while the requests above are answered,
 * short enough to keep the file quick.
 */
const RESTART_MS = 5000;

/** The supervisor's line for a part killed with SIGKILL (the first restart waits RESTART_MS). */
const restartLine = (part: string): RegExp =>
  new RegExp(`${part} exited \\(SIGKILL\\); restarting in ${RESTART_MS / 1000} s`);

let fake: FakeAnthropic;
let dev: Spawned;
let dataDir: string;
let base: string;
let apiToken: string;
let serviceToken: string;
let agentId: string;

interface Answer {
  status: number;
  headers: Headers;
  body: Record<string, unknown>;
  ms: number;
}

async function call(
  method: string,
  url: string,
  options: { token?: string; body?: object; headers?: Record<string, string> } = {}
): Promise<Answer> {
  const started = Date.now();
  const res = await fetch(`${base}${url}`, {
    method,
    headers: {
      ...(options.token ? { authorization: `Bearer ${options.token}` } : {}),
      ...(options.body ? { 'content-type': 'application/json' } : {}),
      ...options.headers,
    },
    body: options.body ? JSON.stringify(options.body) : undefined,
    signal: AbortSignal.timeout(30_000),
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : {}, ms: Date.now() - started };
}

/**
 * Runs assertions; when one fails, its message also carries the stack's last log lines (an answer that is not the
 * expected 503 is explained there, e.g. an error the service did not recognize as an outage).
 */
function withStackOutput(assertions: () => void): void {
  try {
    assertions();
  } catch (err) {
    if (err instanceof Error)
      err.message +=
        `\n--- the stack's log entries of unexpected errors ---\n${unexpectedErrorEntries(dev.output())}` +
        `\n--- the stack's last log lines ---\n${dev.output().split('\n').slice(-40).join('\n')}`;
    throw err;
  }
}

/**
 * @param output the stack's (pretty) log.
 * @returns the first lines of each log entry of an unexpected error (its type, message and stack) or a 500 answer.
 */
function unexpectedErrorEntries(output: string): string {
  const entries = output.split(/\n(?=\S*\[\d\d:\d\d:\d\d\.\d{3}\])/);
  return (
    entries
      .filter((entry) => /status\S*: 500\b|unexpected error/.test(entry))
      .map((entry) => entry.split('\n').slice(0, 12).join('\n'))
      .join('\n') || '(none)'
  );
}

const MESSAGE = 'Service temporarily unavailable. Please retry.';
function expectV1Outage(a: Answer): void {
  expect({ status: a.status, body: a.body, retryAfter: a.headers.get('retry-after') }).toEqual({
    status: 503,
    body: { error: true, statusCode: 503, statusMessage: 'Service Unavailable', message: MESSAGE },
    retryAfter: '1',
  });
  expect(a.ms).toBeLessThan(OUTAGE_ANSWER_MS);
}
function expectCurrentOutage(a: Answer): void {
  expect({ status: a.status, body: a.body, retryAfter: a.headers.get('retry-after') }).toEqual({
    status: 503,
    body: { error: { code: 'service_unavailable', message: MESSAGE } },
    retryAfter: '1',
  });
  expect(a.ms).toBeLessThan(OUTAGE_ANSWER_MS);
}

async function waitReady(timeoutMs = 90_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const ok = await fetch(`${base}/readyz`, { signal: AbortSignal.timeout(5000) })
      .then((r) => r.status === 200)
      .catch(() => false);
    if (ok) return;
    if (Date.now() > deadline) throw new Error(`not ready after ${timeoutMs} ms:\n${dev.output().slice(-3000)}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

/** `[chunks:N][slow:MS]`: the fake model streams `tok1 ` … `tokN `, MS apart. */
const reply = (n: number): string => Array.from({ length: n }, (_, i) => `tok${i + 1} `).join('');

function startStream(chunks: number, slowMs: number): Promise<LiveStream> {
  return openSse(`${base}/api/v1/agents/${agentId}/execute`, {
    method: 'POST',
    headers: { authorization: `Bearer ${apiToken}` },
    body: { message: `[chunks:${chunks}][slow:${slowMs}] ${Math.random()}`, stream: true },
  });
}

function textOf(events: SseEvent[]): string {
  return events
    .filter((e) => e.event === 'message')
    .map((e) => JSON.parse(e.data))
    .filter((d) => d.messageType === 'stream_event')
    .map((d) => d.delta.text)
    .join('');
}

/** Ids 1, 2, 3 … without a gap or a repeat, the text whole, and `result` last. */
function expectWholeStream(events: SseEvent[], chunks: number): void {
  expect(events.map((e) => Number(e.id))).toEqual(events.map((_, i) => i + 1));
  expect(textOf(events)).toBe(reply(chunks));
  expect(events.at(-1)!.event).toBe('result');
}

/**
 * Starts `npm run dev` on free ports. A port is only free when chosen: another process on this machine (another
 * test run's servers pick random ports too) can take it before the server binds it, which the launcher reports as
 * `port … is already in use`; then it is started again on other ports (at most three times).
 */
async function startDev(): Promise<NodeJS.ProcessEnv> {
  for (let attempt = 1; ; attempt++) {
    const [port, mongo, temporal, ui] = await Promise.all([freePort(), freePort(), freePort(), freePort()]);
    base = `http://127.0.0.1:${port}`;
    const env = childTestEnv({
      PORT: String(port),
      DATA_DIR: dataDir,
      DEV_MONGO_PORT: String(mongo),
      DEV_TEMPORAL_PORT: String(temporal),
      DEV_TEMPORAL_UI_PORT: String(ui),
      RESTART_BACKOFF_MS: String(RESTART_MS),
      RESTART_BACKOFF_MAX_MS: String(RESTART_MS),
      DEPENDENCY_TIMEOUT_MS: '3000',
      ANTHROPIC_API_KEY: 'test-key',
      ANTHROPIC_BASE_URL: fake.url,
      DEFAULT_MODEL: 'claude-test',
      LOG_LEVEL: 'warn',
      WORKER_PROCESSES: '1',
    });
    delete env.MONGODB_URI;
    delete env.TEMPORAL_ADDRESS;
    dev = spawnScript('scripts/dev.ts', env);
    await dev.waitFor(/Ctrl-C stops everything|is already in use/, 120_000).catch(() => undefined);
    if (!/is already in use/.test(dev.output()) || attempt === 3) {
      await dev.waitFor(/Ctrl-C stops everything/, 1000);
      return env;
    }
    dev.child.kill('SIGINT');
    await dev.exited();
  }
}

beforeAll(async () => {
  fake = await startFakeAnthropic();
  dataDir = mkdtempSync(path.join(os.tmpdir(), 'aas-heal-'));
  const env = await startDev();
  const boot = runScript('scripts/admin.ts', ['bootstrap', '--org', 'Heal', '--email', 'heal@example.com'], env);
  expect(boot.status).toBe(0);
  ({ apiToken, serviceToken } = JSON.parse(boot.stdout));
  const agent = await call('POST', '/api/v1/agents', { token: apiToken, body: { name: 'A', systemPrompt: 'p' } });
  expect(agent.status).toBe(200);
  agentId = agent.body.id as string;
}, 180_000);

afterAll(async () => {
  if (dev) {
    dev.child.kill('SIGINT');
    const { code } = await dev.exited();
    expect(code).toBe(0);
  }
  await fake?.close();
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
}, 60_000);

it('worker-only process killed mid-stream: the supervisor restarts it; the same connection ends with the whole reply', async () => {
  const worker = await findProcess(dev.child.pid!, PARTS.worker);
  const stream = await startStream(40, 100);
  await stream.waitFor(6);
  await killHard(worker.pid);
  await dev.waitFor(restartLine('worker'));
  await stream.ended;
  expectWholeStream(stream.events, 40);
  expect((await findProcess(dev.child.pid!, PARTS.worker)).pid).not.toBe(worker.pid);
});

it('service process killed mid-stream (it ran the reply): the reply goes on elsewhere, and the client resumes after Last-Event-ID', async () => {
  const service = await findProcess(dev.child.pid!, PARTS.service);
  const first = await startStream(60, 100);
  await first.waitFor(6);
  await killHard(service.pid);
  await first.ended; // the connection is cut
  await dev.waitFor(restartLine('service'));
  const { executionId } = JSON.parse(first.events[0].data);
  const lastId = first.events.at(-1)!.id!;
  await waitReady();
  const rest = await openSse(`${base}/api/v1/executions/${executionId}/stream`, {
    headers: { authorization: `Bearer ${apiToken}`, 'last-event-id': lastId },
  });
  await rest.ended;
  expect(Number(rest.events[0].id)).toBe(Number(lastId) + 1);
  expectWholeStream([...first.events, ...rest.events], 60);
  // Started and restarted with the service process's heap limit (scripts/lib/serviceHeap.ts).
  const heapLimit = serviceNodeArgs({})[0];
  expect(service.cmd.split(' ')).toContain(heapLimit);
  const restarted = await findProcess(dev.child.pid!, PARTS.service);
  expect(restarted.pid).not.toBe(service.pid);
  expect(restarted.cmd.split(' ')).toContain(heapLimit);
  expect((await findProcess(dev.child.pid!, PARTS.worker)).cmd.split(' ')).toContain(heapLimit);
});

it('Temporal killed: execute, cancel and readyz answer 503 in seconds; then the running execution finishes', async () => {
  const temporal = await findProcess(dev.child.pid!, PARTS.temporal);
  const services = [await findProcess(dev.child.pid!, PARTS.service), await findProcess(dev.child.pid!, PARTS.worker)];
  const running = await startStream(60, 100);
  await running.waitFor(4);
  const { executionId } = JSON.parse(running.events[0].data);
  await killHard(temporal.pid);

  const [execute, clientExecute, cancel, ready] = await Promise.all([
    call('POST', `/api/v1/agents/${agentId}/execute`, { token: apiToken, body: { message: 'hello' } }),
    call('POST', '/api/agent/execute', { token: serviceToken, body: { characterId: agentId, message: 'hello' } }),
    call('POST', `/api/v1/executions/${executionId}/cancel`, { token: apiToken }),
    call('GET', '/readyz'),
  ]);
  expectV1Outage(execute);
  expectCurrentOutage(clientExecute);
  expectV1Outage(cancel);
  expect(ready.status).toBe(503);
  expect(ready.body.checks).toEqual({ mongo: 'ok', temporal: 'unavailable' });
  expect(ready.ms).toBeLessThan(READY_ANSWER_MS);
  // Refused means never run: the two executions asked for during the outage were marked failed before the answer
  // (the engine's client keeps retrying a start on its own past the request's deadline), so none waits to start
  // when the engine is back.
  const pending = await call('GET', '/api/v1/executions?status=pending', { token: apiToken });
  expect(pending.body.executions).toEqual([]);
  const failed = await call('GET', '/api/v1/executions?status=failed', { token: apiToken });
  expect((failed.body.executions as { error: unknown }[]).map((e) => e.error)).toEqual([
    { message: 'Could not start the execution', code: 'start_failed' },
    { message: 'Could not start the execution', code: 'start_failed' },
  ]);
  await dev.waitFor(restartLine('temporal'));

  // Back without restarting the api or the worker: the stream finishes, and new work runs.
  await waitReady();
  await running.ended;
  expectWholeStream(running.events, 60);
  const again = await call('POST', `/api/v1/agents/${agentId}/execute`, { token: apiToken, body: { message: 'hi' } });
  expect(again.status).toBe(200);
  expect(again.body.result).toBe('Echo: hi');
  for (const svc of services) expect(process.kill(svc.pid, 0)).toBe(true); // the same service and worker

  // The executions whose workflow could not start were marked failed: none claims to run.
  for (const status of ['pending', 'running']) {
    const list = await call('GET', `/api/v1/executions?status=${status}`, { token: apiToken });
    expect(list.body.executions).toEqual([]);
  }
});

// A hung server keeps its connections open: only the api's own check ends the wait (lib/temporal.ts
// whileTemporalAnswers). Temporal: the wait needs its workflow to go on. The database: the reply's outcome comes
// through it (the execution's stream: commands/executions.ts awaitExecution), and the same watch checks it.
it.each([
  ['Temporal', PARTS.temporal],
  ['the database', PARTS.ferretdb],
] as const)(
  '%s hung (SIGSTOP): a JSON execute already waiting for its reply answers 503 in seconds',
  async (_, part) => {
    const hung = await findProcess(dev.child.pid!, part);
    const waiting = call('POST', `/api/v1/agents/${agentId}/execute`, {
      token: apiToken,
      body: { message: `[chunks:40][slow:100] ${Math.random()}` },
    });
    await new Promise((r) => setTimeout(r, 500)); // it is waiting for the execution's outcome
    process.kill(hung.pid, 'SIGSTOP');
    const stoppedAt = Date.now();
    try {
      const answered = await waiting;
      expect({ status: answered.status, body: answered.body }).toEqual({
        status: 503,
        body: { error: true, statusCode: 503, statusMessage: 'Service Unavailable', message: MESSAGE },
      });
      expect(Date.now() - stoppedAt).toBeLessThan(OUTAGE_ANSWER_MS);
    } finally {
      process.kill(hung.pid, 'SIGCONT');
    }
    await waitReady();
    const again = await call('POST', `/api/v1/agents/${agentId}/execute`, { token: apiToken, body: { message: 'hi' } });
    expect(again.status).toBe(200);
  }
);

it('database killed (FerretDB, then PostgreSQL): requests answer 503 in seconds; then work resumes', async () => {
  for (const part of [PARTS.ferretdb, PARTS.postgres]) {
    const victim = await findProcess(dev.child.pid!, part);
    const running = await startStream(60, 100);
    await running.waitFor(4);
    await killHard(victim.pid);

    const [list, clientExecute, ready] = await Promise.all([
      // A page this process has not cached: a cached one is still served during an outage, until it expires
      // (CACHE_TTL_MS; docs/decisions.md "Caches of read-mostly records").
      call('GET', `/api/v1/agents?limit=${part === PARTS.ferretdb ? 3 : 4}`, { token: apiToken }),
      call('POST', '/api/agent/execute', { token: serviceToken, body: { characterId: agentId, message: 'hello' } }),
      call('GET', '/readyz'),
    ]);
    withStackOutput(() => {
      expectV1Outage(list);
      expectCurrentOutage(clientExecute);
    });
    expect(ready.status).toBe(503);
    expect(ready.body.checks).toEqual({ mongo: 'unavailable', temporal: 'ok' });
    expect(ready.ms).toBeLessThan(READY_ANSWER_MS);

    await waitReady();
    await running.ended;
    expectWholeStream(running.events, 60);
    const again = await call('GET', '/api/v1/agents', { token: apiToken });
    expect(again.status).toBe(200);
  }
  expect(dev.output()).toMatch(restartLine('ferretdb'));
  expect(dev.output()).toMatch(restartLine('postgres'));
});

it('database hung (FerretDB stopped with SIGSTOP, connections open): every route answers 503 in seconds', async () => {
  // A hung server answers none of the calls already written to its open connections: only the request's own
  // deadline (REQUEST_DEADLINE_MS, the default here) ends the wait, for the request as a whole (lib/requestDeadline.ts).
  const ferret = await findProcess(dev.child.pid!, PARTS.ferretdb);
  process.kill(ferret.pid, 'SIGSTOP');
  try {
    await new Promise((r) => setTimeout(r, 1100)); // past CACHE_TTL_MS: no cached record answers for the database
    const [task, list, jobs, clientExecute] = await Promise.all([
      call('POST', '/api/v1/tasks', { token: apiToken, body: { title: `hung ${Math.random()}` } }),
      call('GET', '/api/v1/agents?limit=7', { token: apiToken }),
      call('GET', '/api/jobs?limit=3', { token: serviceToken }),
      call('POST', '/api/agent/execute', { token: serviceToken, body: { characterId: agentId, message: 'hello' } }),
    ]);
    withStackOutput(() => {
      expectV1Outage(task);
      expectV1Outage(list);
      expectCurrentOutage(jobs);
      expectCurrentOutage(clientExecute);
    });
  } finally {
    process.kill(ferret.pid, 'SIGCONT');
  }
  await waitReady();
  const again = await call('POST', '/api/v1/tasks', { token: apiToken, body: { title: 'after the hang' } });
  expect(again.status).toBe(200);
});
