/**
 * A real Temporal worker inside the test process, on the test file's own task queue, running the real workflows
 * (bundled once by the global setup) and the real activities.
 */
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { NativeConnection, Worker } from '@temporalio/worker';
import { createActivities } from '../../activities';
import { HEARTBEAT_THROTTLE } from '../../activities/executionReply';
import type { Config } from '../../lib/config';
import type { Logger } from '../../lib/logger';
import { temporalExtensions } from '../../lib/dataConverter';
import { temporalConnectionOptions } from '../../lib/temporal';
import { startFakeAnthropic, type FakeAnthropic } from '../../scripts/fakes/anthropic';
import { createTestApp, type TestApp } from './app';
import { testLogger } from './env';
import { runInProcessWorker } from '../../worker/create';

/**
 * The workflow code the workers run (the global setup's bundle, else bundled from source) with the workers' data
 * converter, for Worker.runReplayHistory: sealed payloads are opened, clear ones (histories from before the codec)
 * pass through.
 * @param config the test configuration (its encryption key).
 * @returns the replay options.
 */
export function replaySource(config: Readonly<Config>) {
  const bundle = process.env.AAS_WORKFLOW_BUNDLE;
  const { dataConverter } = temporalExtensions(config);
  return bundle
    ? { workflowBundle: { code: readFileSync(bundle, 'utf8') }, dataConverter }
    : { workflowsPath: require.resolve('../../workflows'), dataConverter };
}

export interface TestWorker {
  worker: Worker;
  stop(): Promise<void>;
}

/**
 * @param config the test configuration (its task queue is served).
 * @param logger the activities' logger (default: testLogger(), silent unless TEST_LOG_LEVEL is set).
 * @returns the running worker.
 */
export async function startTestWorker(config: Readonly<Config>, logger: Logger = testLogger()): Promise<TestWorker> {
  const connection = await NativeConnection.connect(temporalConnectionOptions(config));
  const bundlePath = process.env.AAS_WORKFLOW_BUNDLE;
  const worker = await Worker.create({
    connection,
    namespace: config.temporalNamespace,
    taskQueue: config.temporalTaskQueue,
    ...temporalExtensions(config).worker(bundlePath ? { code: readFileSync(bundlePath, 'utf8') } : undefined),
    activities: createActivities({ logger, config }),
    maxHeartbeatThrottleInterval: HEARTBEAT_THROTTLE,
    shutdownGraceTime: '1 second',
  });
  const running = worker.run();
  return {
    worker,
    stop: async () => {
      worker.shutdown();
      await running;
      await connection.close();
    },
  };
}

/**
 * A worker as a service process runs it (worker/create.ts `runInProcessWorker`, the production code), whose client
 * the app then starts executions through, eagerly.
 * @param t the app (its `temporal.eager` is set).
 * @param logger the activities' logger.
 * @returns the running worker.
 */
export async function startServiceTestWorker(t: TestApp, logger: Logger = testLogger()): Promise<TestWorker> {
  const bundlePath = process.env.AAS_WORKFLOW_BUNDLE;
  const inProcess = await runInProcessWorker(
    { config: t.config, logger },
    { ...(bundlePath ? { code: readFileSync(bundlePath, 'utf8') } : {}), shutdownGraceTime: '1 second' }
  );
  t.temporal.eager = inProcess.client;
  return {
    worker: inProcess.worker,
    stop: async () => {
      t.temporal.eager = undefined;
      await inProcess.stop();
    },
  };
}

/** What {@link useExecutionStack} starts; its fields are set once the file's `beforeAll` hooks ran. */
export interface ExecutionStack {
  /** The fake Anthropic API the app's provider points to. */
  fake: FakeAnthropic;
  /** The app, listening on a loopback port. */
  t: TestApp;
  /** Its base URL. */
  base: string;
  /** The in-process worker on the file's own task queue (a test may stop it and start another). */
  worker: TestWorker;
}

/**
 * The execution stack of a whole test file: a fake Anthropic API, the app configured for it and listening, and an
 * in-process worker on a task queue of the file's own; stopped after the file's tests.
 * @param name the task queue's prefix.
 * @param overrides further environment overrides of the app's configuration.
 * @param options `service`: the worker runs as in a service process, and the app starts executions eagerly through it.
 * @returns the stack, filled in by `beforeAll`.
 */
export function useExecutionStack(
  name: string,
  overrides: Record<string, string> = {},
  options: { service?: boolean } = {}
): ExecutionStack {
  const stack = {} as ExecutionStack;
  beforeAll(async () => {
    stack.fake = await startFakeAnthropic();
    stack.t = createTestApp({
      ANTHROPIC_API_KEY: 'test-key',
      ANTHROPIC_BASE_URL: stack.fake.url,
      TEMPORAL_TASK_QUEUE: `${name}-${randomBytes(4).toString('hex')}`,
      ...overrides,
    });
    stack.worker = options.service ? await startServiceTestWorker(stack.t) : await startTestWorker(stack.t.config);
    stack.base = await stack.t.listen();
  });
  afterAll(async () => {
    await stack.worker?.stop();
    await stack.t?.close();
    await stack.fake?.close();
  }, 60_000);
  return stack;
}
