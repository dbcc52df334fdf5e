/**
 * Live events are pushed, not polled (lib/wakeups.ts): two real api processes whose fallback poll is a minute
 * apart, one worker, one streamed execution. A client on each api receives every event, in order, without gaps,
 * while the reply streams — which only wake-ups can deliver before the fallback poll's first tick.
 *
 * The same channel clears the processes' caches (lib/sharedCache.ts), kept here for a minute: a write on one api is
 * seen on the other within a few seconds (as soon as the datagram arrives), which only an invalidation can do.
 */
import { randomBytes } from 'node:crypto';
import { createToken } from '../../commands/tokens';
import { createTemporal } from '../../lib/temporal';
import { executionWorkflowId } from '../../workflows/ids';
import { freePort } from '../../scripts/servers/launch';
import { startFakeAnthropic, type FakeAnthropic } from '../../scripts/fakes/anthropic';
import { childTestEnv, testConfig } from '../helpers/env';
import { bearer, buildOrg } from '../helpers/factories';
import { useTestDatabase } from '../helpers/mongo';
import { spawnScript, type Spawned } from '../helpers/processes';
import { until } from '../helpers/until';
import { openSse, type SseEvent } from '../helpers/sse';
import { startTestWorker, type TestWorker } from '../helpers/worker';

const db = useTestDatabase();
const queue = `live-${randomBytes(4).toString('hex')}`;
/** Far longer than the test may take: only a wake-up can deliver an event written after a client subscribed. */
const FALLBACK_POLL_MS = '60000';
let fake: FakeAnthropic;
let worker: TestWorker;
let env: Record<string, string>;
const apis: Array<{ proc: Spawned; url: string }> = [];

beforeAll(async () => {
  fake = await startFakeAnthropic();
  env = {
    MONGODB_URI: db.uri,
    TEMPORAL_TASK_QUEUE: queue,
    ANTHROPIC_API_KEY: 'test-key',
    ANTHROPIC_BASE_URL: fake.url,
    DEFAULT_MODEL: 'claude-test',
    EVENT_POLL_MS: FALLBACK_POLL_MS,
    CACHE_TTL_MS: '60000',
  };
  worker = await startTestWorker(testConfig(env));
  const ports = [await freePort(), await freePort()];
  for (const port of ports) {
    const proc = spawnScript('api/server.ts', childTestEnv({ ...env, PORT: String(port) }));
    apis.push({ proc, url: `http://127.0.0.1:${port}` });
  }
  await Promise.all(apis.map((a) => a.proc.waitFor(/api listening/, 60_000)));
}, 90_000);

afterAll(async () => {
  for (const a of apis) {
    a.proc.child.kill('SIGTERM');
    await a.proc.exited();
  }
  await worker?.stop();
  await fake?.close();
});

const summary = (events: SseEvent[]): string[] => events.map((e) => `${e.id} ${e.event} ${e.data}`);

it('a client on each of two api processes receives the same events, in order, with no gaps', async () => {
  const org = await buildOrg();
  const auth = { authorization: bearer(org.apiToken) };
  const agent = await fetch(`${apis[0].url}/api/v1/agents`, {
    method: 'POST',
    headers: { ...auth, 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'Live', systemPrompt: 'Be brief.' }),
  }).then((r) => r.json() as Promise<{ id: string }>);

  const onA = await openSse(`${apis[0].url}/api/v1/agents/${agent.id}/execute`, {
    method: 'POST',
    headers: auth,
    body: { message: '[chunks:40][slow:25]', stream: true },
  });
  expect(onA.status).toBe(200);
  await onA.waitFor(1);
  const { executionId } = JSON.parse(onA.events[0].data) as { executionId: string };
  const onB = await openSse(`${apis[1].url}/api/v1/executions/${executionId}/stream`, { headers: auth });
  expect(onB.status).toBe(200);

  await Promise.all([onA.ended, onB.ended]);
  for (const events of [onA.events, onB.events]) {
    expect(events.map((e) => Number(e.id))).toEqual(events.map((_, i) => i + 1));
    expect(events.at(-1)!.event).toBe('result');
  }
  expect(summary(onB.events)).toEqual(summary(onA.events));
  const text = onA.events
    .filter((e) => e.event === 'message')
    .map((e) => JSON.parse(e.data) as { messageType?: string; delta?: { text: string } })
    .filter((d) => d.messageType === 'stream_event')
    .map((d) => d.delta!.text)
    .join('');
  expect(text).toBe(Array.from({ length: 40 }, (_, i) => `tok${i + 1} `).join(''));

  // The workflow still records the execution's service events after its `result` event: let it finish before the
  // teardown closes the database under it.
  const temporal = createTemporal(testConfig(env));
  await temporal.client.workflow.getHandle(executionWorkflowId(executionId)).result();
  await temporal.connection.close();
});

it('a write on one api process clears the cached lists and tokens of the other', async () => {
  const org = await buildOrg();
  const call = (api: number, method: string, path: string, token: string, body?: unknown): Promise<Response> =>
    fetch(`${apis[api].url}/api/v1${path}`, {
      method,
      headers: { authorization: bearer(token), 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  const list = async (api: number): Promise<{ total: number; names: string[] }> => {
    const res = await call(api, 'GET', '/agents?limit=20', org.apiToken);
    expect(res.status).toBe(200);
    const body = (await res.json()) as { total: number; agents: Array<{ name: string }> };
    return { total: body.total, names: body.agents.map((a) => a.name) };
  };
  // Far less than the caches' minute: only an invalidation from the other process explains a change within it.
  const SOON_MS = 5000;

  // Cached on B, then an agent created on A.
  expect((await list(1)).total).toBe(0);
  const created = await call(0, 'POST', '/agents', org.apiToken, { name: 'Fresh', systemPrompt: 'x' });
  expect(created.status).toBe(200);
  await until(
    () => list(1),
    (l) => l.total === 1 && l.names[0] === 'Fresh',
    SOON_MS,
    20
  );

  // Cached on A, renamed on B.
  const { id } = (await created.json()) as { id: string };
  expect((await list(0)).names[0]).toBe('Fresh');
  expect((await call(1, 'PATCH', `/agents/${id}`, org.apiToken, { name: 'Renamed' })).status).toBe(200);
  await until(
    () => list(0),
    (l) => l.names[0] === 'Renamed',
    SOON_MS,
    20
  );

  // Resolved and cached on B, revoked on A.
  const { token, record } = await createToken({ organizationId: org.organizationId, userId: org.userId, kind: 'v1' });
  expect((await call(1, 'GET', '/profile', token)).status).toBe(200);
  expect((await call(0, 'DELETE', `/keys/${record._id}`, org.apiToken)).status).toBe(200);
  const refused = await until(
    () => call(1, 'GET', '/profile', token),
    (r) => r.status === 401,
    SOON_MS,
    20
  );
  expect(((await refused.json()) as { message: string }).message).toBe('Invalid or expired token');
});
