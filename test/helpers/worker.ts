/**
 * A real Temporal worker inside the test process, on the test file's own task queue, running the real workflows
 * (bundled once by the global setup) and the real activities.
 */
import { readFileSync } from 'node:fs';
import { NativeConnection, Worker } from '@temporalio/worker';
import { createActivities } from '../../activities';
import { HEARTBEAT_THROTTLE } from '../../activities/executions';
import type { Config } from '../../lib/config';
import type { Logger } from '../../lib/logger';
import { testLogger } from './env';

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
  const connection = await NativeConnection.connect({ address: config.temporalAddress });
  const bundlePath = process.env.AAS_WORKFLOW_BUNDLE;
  const worker = await Worker.create({
    connection,
    namespace: config.temporalNamespace,
    taskQueue: config.temporalTaskQueue,
    ...(bundlePath
      ? { workflowBundle: { code: readFileSync(bundlePath, 'utf8') } }
      : { workflowsPath: require.resolve('../../workflows') }),
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
