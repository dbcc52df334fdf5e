/**
 * Direct cancel (docs/decisions.md "Execution shape 3"): a reply runs as a local activity, which sees Temporal's
 * cancellation only at the next heartbeat of its workflow task; the cancel endpoint also aborts the provider request
 * directly, in the process that runs it, or over the wake-up channel in another one. Each test checks which path
 * stopped the reply (no time is measured): the process that ran it counts a reply stopped by the direct cancel
 * (`aas_replies_aborted_directly_total`: its failure is `ExecutionCancelled`, not Temporal's cancellation), and the
 * stream ends with its terminal `error` event.
 */
import { randomBytes } from 'node:crypto';
import { Execution } from '../../../models';
import { startFakeAnthropic, type FakeAnthropic } from '../../../scripts/fakes/anthropic';
import { repliesAbortedDirectly } from '../../../lib/metrics';
import { freePort } from '../../../scripts/servers/launch';
import { createTestApp, type TestApp } from '../../helpers/app';
import { childTestEnv } from '../../helpers/env';
import { bearer, buildOrg } from '../../helpers/factories';
import { useTestDatabase } from '../../helpers/mongo';
import { spawnScript, type Spawned } from '../../helpers/processes';
import { openSse } from '../../helpers/sse';
import { v1As } from '../../helpers/v1';
import { useExecutionStack } from '../../helpers/worker';

const db = useTestDatabase();
const stack = useExecutionStack('direct-cancel', { DEFAULT_MODEL: 'claude-test' }, { service: true });

/** @returns the count of replies the cancel endpoint stopped directly, in this process. */
const abortedHere = async (): Promise<number> => (await repliesAbortedDirectly.get()).values[0]?.value ?? 0;

/**
 * @param port a worker process's METRICS_PORT.
 * @returns the same count, in that process.
 */
async function abortedThere(port: number): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith('aas_replies_aborted_directly_total '));
  return Number(line?.split(' ')[1] ?? 0);
}

/**
 * Streams a long reply, cancels it after a few events, and checks the end of the stream and the record.
 * @param app the app that takes the requests.
 * @param base its URL.
 * @returns the execution id.
 */
async function streamAndCancel(app: TestApp, base: string, fake: FakeAnthropic): Promise<string> {
  const org = await buildOrg();
  const as = v1As(app, org.apiToken);
  const agent = await as.post('/agents', { name: 'Long', systemPrompt: 'p' });
  const abortedBefore = fake.aborted;
  const live = await openSse(`${base}/api/v1/agents/${agent.body.id}/execute`, {
    method: 'POST',
    headers: { authorization: bearer(org.apiToken) },
    body: { message: '[chunks:400][slow:100]', stream: true },
  });
  await live.waitFor(4, 30_000);
  const { executionId } = JSON.parse(live.events[0].data);
  const res = await as.post(`/executions/${executionId}/cancel`);
  expect(res.status).toBe(200);
  await live.ended;
  expect(live.events.at(-1)).toMatchObject({
    event: 'error',
    data: JSON.stringify({ message: 'Execution cancelled' }),
  });
  expect(await Execution.findById(executionId).lean()).toMatchObject({ status: 'cancelled' });
  expect(fake.aborted).toBeGreaterThan(abortedBefore);
  return executionId;
}

it('in the process that runs the reply: the cancel aborts the provider request directly', async () => {
  const before = await abortedHere();
  await streamAndCancel(stack.t, stack.base, stack.fake);
  expect(await abortedHere()).toBe(before + 1);
}, 60_000);

describe('two processes', () => {
  let fake: FakeAnthropic;
  let app: TestApp;
  let worker: Spawned | undefined;
  afterAll(async () => {
    worker?.crash();
    await app?.close();
    await fake?.close();
  });

  it('the reply runs in a worker process: the cancel taken by the api reaches it over the wake-up channel', async () => {
    fake = await startFakeAnthropic();
    const env = {
      ANTHROPIC_API_KEY: 'test-key',
      ANTHROPIC_BASE_URL: fake.url,
      DEFAULT_MODEL: 'claude-test',
      TEMPORAL_TASK_QUEUE: `direct-cancel-2-${randomBytes(4).toString('hex')}`,
    };
    // The api here has no worker (its starts are plain); the worker process runs every execution.
    app = createTestApp(env);
    const base = await app.listen();
    const metricsPort = await freePort();
    worker = spawnScript(
      'worker/index.ts',
      childTestEnv({ ...env, MONGODB_URI: db.uri, METRICS_PORT: String(metricsPort) })
    );
    await worker.waitFor(/worker started/, 90_000);
    const before = await abortedThere(metricsPort);
    const hereBefore = await abortedHere();
    await streamAndCancel(app, base, fake);
    expect(await abortedThere(metricsPort)).toBe(before + 1);
    expect(await abortedHere()).toBe(hereBefore);
  }, 120_000);
});
