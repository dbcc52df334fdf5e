/**
 * A real Temporal worker inside the test process, on the test file's own task queue, running the real workflows
 * (bundled once by the global setup) and the real activities.
 */
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { NativeConnection, type Worker } from '@temporalio/worker';
import { createActivities } from '../../activities';
import { HEARTBEAT_THROTTLE } from '../../activities/executionReply';
import type { Config } from '../../lib/config';
import type { Logger } from '../../lib/logger';
import { temporalExtensions } from '../../lib/dataConverter';
import { temporalConnectionOptions } from '../../lib/temporal';
import { startFakeAnthropic, type FakeAnthropic } from '../../scripts/fakes/anthropic';
import { createTestApp, serveTestApp, type TestApp, type TestEnv } from './app';
import { childTestEnv, TEST_ENCRYPTION_KEY, testLogger } from './env';
import { spawnWorker, type Spawned } from './processes';
import { closeAfterAll } from './teardown';
import { runInProcessWorker } from '../../worker/create';
import { ServiceWorker } from '../../worker/workflowThreads';

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
  const worker = await ServiceWorker.create({
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
  /**
   * The in-process worker on the file's own task queue (a test may stop it and start another); none with
   * `worker: false`.
   */
  worker: TestWorker;
  /**
   * The app's environment overrides (the fake's address, the task queue, the file's own): for another app on the
   * same queue, or a worker process (childTestEnv).
   */
  env: Record<string, string>;
}

/**
 * The execution stack of a whole test file: a fake Anthropic API, the app configured for it and listening, and an
 * in-process worker on a task queue of the file's own; closed after the file's tests, the worker first
 * (test/helpers/teardown.ts).
 * @param name the task queue's prefix.
 * @param overrides further environment overrides of the app's configuration (a function: computed after the file's
 * earlier `beforeAll` hooks, for instance from another fake server's address).
 * @param options `service`: the worker runs as in a service process, and the app starts executions eagerly through
 * it; `worker: false`: no worker in the test process (a `describe` block starts one with useTestWorker, or the tests
 * start worker processes); `appUrl`: the app's address is also its APP_URL (serveTestApp); `workerLogger`: the
 * activities' logger.
 * @returns the stack, filled in by `beforeAll`.
 */
export function useExecutionStack(
  name: string,
  overrides: TestEnv = {},
  options: { service?: boolean; worker?: boolean; appUrl?: boolean; workerLogger?: Logger } = {}
): ExecutionStack {
  const stack = {} as ExecutionStack;
  beforeAll(async () => {
    stack.fake = await startFakeAnthropic();
    stack.env = {
      ANTHROPIC_API_KEY: 'test-key',
      ANTHROPIC_BASE_URL: stack.fake.url,
      TEMPORAL_TASK_QUEUE: `${name}-${randomBytes(4).toString('hex')}`,
      ...(typeof overrides === 'function' ? overrides() : overrides),
    };
    if (options.appUrl) ({ t: stack.t, base: stack.base } = await serveTestApp(stack.env));
    else stack.t = createTestApp(stack.env);
    if (options.worker !== false)
      stack.worker = options.service
        ? await startServiceTestWorker(stack.t, options.workerLogger)
        : await startTestWorker(stack.t.config, options.workerLogger);
    stack.base ??= await stack.t.listen();
  });
  closeAfterAll(async () => {
    await stack.worker?.stop();
    await stack.t?.close();
    await stack.fake?.close();
  });
  return stack;
}

/**
 * An in-process worker on an app's task queue, started by a `beforeAll` hook (after the app's).
 * @param app the app whose configuration (task queue) the worker serves, read by that hook.
 * @param options `describe`: for the tests of the `describe` block it is called in, stopped by the block's
 * `afterAll` (the file's later blocks run without it); otherwise for the whole file, stopped before the apps and the
 * database close (test/helpers/teardown.ts). `logger`: the activities' logger.
 * @returns the worker, set by that hook.
 */
export function useTestWorker(
  app: () => TestApp,
  options: { describe?: boolean; logger?: Logger } = {}
): { worker: TestWorker } {
  const started = {} as { worker: TestWorker };
  beforeAll(async () => {
    started.worker = await startTestWorker(app().config, options.logger);
  });
  const stop = async (): Promise<void> => started.worker?.stop();
  if (options.describe) afterAll(stop);
  else closeAfterAll(stop);
  return started;
}

/**
 * Worker processes on a file's execution stack, for tests that kill one mid-work: each runs with the app's environment
 * and the file's database; those still running are crashed after the block's tests. Call at a `describe`'s level.
 * @param stack the file's execution stack.
 * @param db the file's database.
 * @returns start (resolves once the worker polls) and the workers started so far.
 */
export function useWorkerProcesses(
  stack: ExecutionStack,
  db: { uri: string }
): { start: () => Promise<Spawned>; workers: Spawned[] } {
  const workers: Spawned[] = [];
  afterAll(() => workers.forEach((w) => w.crash()));
  const start = (): Promise<Spawned> =>
    spawnWorker(
      childTestEnv({
        ...stack.env,
        MONGODB_URI: db.uri,
        WORKSPACES_DIR: stack.t.config.workspacesDir,
        ENCRYPTION_KEY: TEST_ENCRYPTION_KEY,
      }),
      workers
    );
  return { start, workers };
}
