/**
 * The worker's workflow threads (worker/workflowThreads.ts): started as the service starts them, they run workflows
 * (calls into the sandbox without the SDK's per-call timer); a workflow that never yields its thread is the deadlock
 * they are watched for: the thread is terminated and the worker shuts down with the SDK's error for a workflow thread
 * that died. A real worker on the test Temporal server, a real workflow bundle.
 */
import { randomBytes } from 'node:crypto';
import { Client, Connection } from '@temporalio/client';
import { bundleWorkflowCode, NativeConnection } from '@temporalio/worker';
import { temporalConnectionOptions } from '../../lib/temporal';
import { ServiceWorker } from '../../worker/workflowThreads';
import { testConfig } from '../helpers/env';

/** The service's worker, watched with a limit a test can wait for. */
class QuickWatchWorker extends ServiceWorker {
  static override stuckAfterMs = 1500;
}

let code: string;
beforeAll(async () => {
  ({ code } = await bundleWorkflowCode({ workflowsPath: require.resolve('../fixtures/threadWorkflows') }));
}, 60_000);

it('runs workflows; a workflow that never yields its thread gets the thread terminated and the worker shut down', async () => {
  const config = testConfig();
  const taskQueue = `threads-${randomBytes(4).toString('hex')}`;
  const connection = await NativeConnection.connect(temporalConnectionOptions(config));
  const clientConnection = await Connection.connect({ address: config.temporalAddress });
  const client = new Client({ connection: clientConnection, namespace: config.temporalNamespace });
  try {
    const worker = await QuickWatchWorker.create({
      connection,
      namespace: config.temporalNamespace,
      taskQueue,
      workflowBundle: { code },
      shutdownGraceTime: '1 second',
    });
    const running = worker.run();
    const ran = await client.workflow.execute('answers', { taskQueue, workflowId: `${taskQueue}-answers` });
    expect(ran).toBe('answered');

    const startedAt = Date.now();
    await client.workflow.start('spins', { taskQueue, workflowId: `${taskQueue}-spins` });
    await expect(running).rejects.toThrow(/Workflow Worker Thread exited/);
    // Ended by the watch (1.5 s without an answer, checked every second), not by a timer of the SDK's own (5 s).
    expect(Date.now() - startedAt).toBeLessThan(4500);
    await client.workflow.getHandle(`${taskQueue}-spins`).terminate();
  } finally {
    await clientConnection.close();
    await connection.close();
  }
}, 60_000);
