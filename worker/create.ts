/**
 * createWorker: the one place a Temporal Worker is built (docs/architecture.md §3), for the worker-only process
 * (worker/main.ts) and for the service process (worker/service.ts: HTTP and workflows on one NativeConnection).
 */
import { NativeConnection, type Worker } from '@temporalio/worker';
import { Client } from '@temporalio/client';
import type { Duration } from '@temporalio/common';
import { createActivities } from '../activities';
import { HEARTBEAT_THROTTLE } from '../activities/executionReply';
import type { EventDispatcher } from '../commands/serviceEvents';
import { webhookDispatcher } from '../commands/webhooks';
import type { Config } from '../lib/config';
import { temporalExtensions } from '../lib/dataConverter';
import type { Logger } from '../lib/logger';
import { temporalConnectionOptions } from '../lib/temporal';
import { ServiceWorker } from './workflowThreads';

export interface WorkerDeps {
  config: Readonly<Config>;
  logger: Logger;
  /**
   * Signals the webhook deliveries of the service events the activities record (commands/webhookDispatch.ts); when
   * absent, one over a client on the worker's own connection.
   */
  dispatchEvent?: EventDispatcher;
}

/**
 * @param deps configuration, logger and the event dispatcher (the activities').
 * @param connection the process's NativeConnection.
 * @param options `code`: the workflow bundle's text (tests); otherwise WORKFLOW_BUNDLE or the sources.
 * @returns the worker, created (not yet running).
 */
export async function createWorker(
  deps: WorkerDeps,
  connection: NativeConnection,
  options: { code?: string; shutdownGraceTime?: Duration; eagerClient?: Client } = {}
): Promise<Worker> {
  const { config, logger } = deps;
  const dispatchEvent =
    deps.dispatchEvent ??
    webhookDispatcher(
      {
        client: new Client({ connection, namespace: config.temporalNamespace, ...temporalExtensions(config).client }),
        taskQueue: config.temporalTaskQueue,
      },
      logger
    );
  return ServiceWorker.create({
    connection,
    namespace: config.temporalNamespace,
    taskQueue: config.temporalTaskQueue,
    ...temporalExtensions(config).worker(
      options.code !== undefined
        ? { code: options.code }
        : config.workflowBundlePath
          ? { codePath: config.workflowBundlePath }
          : undefined
    ),
    activities: createActivities({ logger, config, dispatchEvent, eagerClient: options.eagerClient }),
    maxConcurrentWorkflowTaskExecutions: workflowTaskSlots(config),
    maxHeartbeatThrottleInterval: HEARTBEAT_THROTTLE,
    shutdownGraceTime: options.shutdownGraceTime ?? '8 seconds',
  });
}

/**
 * Workflow task slots of a worker. An execution holds one for its whole reply (shape 4: its reply and finish are a
 * local activity of its first workflow task), and an eager start needs a free one, else it is refused and the
 * execution runs in any process (the worker-only one, whose api then reads its stream from the database). The slot
 * outlives the execution's admission slot (lib/executionAdmission.ts: freed when its outcome is seen) by the rest of
 * the finish and the task's completion, while the client that got its answer already sends the next; under load those
 * tails queue. Measured with `npm run bench:quick` (c20, EXECUTION_CONCURRENCY=20, 341 executions): the SDK's default
 * 40 slots started 301 eagerly (p37-json alone), 60 started 329, 220 all 341 (docs/decisions.md). A slot is a permit, not memory:
 * the workflow cache (maxCachedWorkflows, ~500 at the service's 1 GiB heap) bounds what it holds.
 * @param config the admission's concurrency.
 * @returns the slots: ten times the admitted executions, plus the SDK's pollers' (never below the SDK's default).
 */
export function workflowTaskSlots(config: Readonly<Config>): number {
  return Math.max(40, 10 * config.executionAdmission.concurrency + 20);
}

/** A worker running in a process that also starts executions (docs/architecture.md §1). */
export interface InProcessWorker {
  worker: Worker;
  connection: NativeConnection;
  /**
   * A client on the worker's own connection: a start with `requestEagerStart` through it hands the first workflow task
   * straight to this worker (eager workflow start), when the worker has a free slot.
   */
  client: Client;
  /** Resolves once the worker has shut down (after {@link stop}). */
  running: Promise<void>;
  /** Drains the worker and closes its connection. */
  stop(): Promise<void>;
}

/**
 * Connects, creates the worker and runs it, with a client on the same NativeConnection for eager starts.
 * @param deps configuration and logger.
 * @param options as {@link createWorker}'s.
 * @returns the running worker, its connection and the client.
 */
export async function runInProcessWorker(
  deps: WorkerDeps,
  options: { code?: string; shutdownGraceTime?: Duration } = {}
): Promise<InProcessWorker> {
  const connection = await NativeConnection.connect(temporalConnectionOptions(deps.config));
  const client = new Client({
    connection,
    namespace: deps.config.temporalNamespace,
    ...temporalExtensions(deps.config).client,
  });
  let worker: Worker;
  try {
    // The executions this client starts eagerly begin their replies at once (activities/executionRun.ts).
    worker = await createWorker(deps, connection, { ...options, eagerClient: client });
  } catch (err) {
    await connection.close();
    throw err;
  }
  const running = worker.run();
  let stopped: Promise<void> | undefined;
  return {
    worker,
    connection,
    client,
    running,
    stop: () =>
      (stopped ??= (async () => {
        if (worker.getState() === 'RUNNING') worker.shutdown();
        await running.catch(() => undefined);
        await connection.close();
      })()),
  };
}
