/**
 * The worker's workflow threads (worker/workflowThreads.ts): started as the service starts them, they run workflows
 * (calls into the sandbox without the SDK's per-call timer); a workflow that never yields its thread is the deadlock
 * they are watched for: the thread is terminated and the worker shuts down with the SDK's error for a workflow thread
 * that died. A real worker on the test Temporal server, a real workflow bundle. The watch itself (`watchProgress`), on a
 * thread that answers the SDK's thread client as the SDK's does: answers keep it alive, even when this thread's event
 * loop was too busy to read them for longer than the limit; a request left unanswered ends the thread.
 */
import { randomBytes } from 'node:crypto';
import { Client, Connection } from '@temporalio/client';
import { Worker as NodeWorker } from 'node:worker_threads';
import { bundleWorkflowCode, DefaultLogger, NativeConnection } from '@temporalio/worker';
import { WorkerThreadClient } from '@temporalio/worker/lib/workflow/threaded-vm';
import { temporalConnectionOptions } from '../../lib/temporal';
import { ServiceWorker, watchProgress } from '../../worker/workflowThreads';
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

describe('the watch of a workflow thread', () => {
  // Answers every request at once, except `destroy`, which it never answers (a request left hanging).
  const ANSWERING = `
    const { parentPort } = require('node:worker_threads');
    parentPort.on('message', ({ requestId, input }) => {
      if (input.type !== 'destroy') parentPort.postMessage({ requestId, result: { type: 'ok' } });
    });`;

  const watched = (stuckAfterMs: number) => {
    const thread = new NodeWorker(ANSWERING, { eval: true });
    const client = new WorkerThreadClient(thread, new DefaultLogger('ERROR'));
    const stuck: number[] = [];
    watchProgress(client, thread, (idle) => stuck.push(idle), stuckAfterMs);
    const exited = new Promise<void>((resolve) => thread.once('exit', () => resolve()));
    return { thread, client, stuck, exited };
  };
  const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

  it('keeps a thread whose answers waited for this thread’s busy event loop', async () => {
    const { thread, client, stuck } = watched(300);
    const answered = client.send({ type: 'get-active-workflow-count' } as never);
    // This thread does not read the answer for 1 s (three times the limit).
    const until = Date.now() + 1000;
    while (Date.now() < until) {
      // busy
    }
    await answered;
    await sleep(700);
    expect(stuck).toEqual([]);
    await thread.terminate();
  });

  it('ends a thread that leaves a request unanswered past the limit', async () => {
    const { client, stuck, exited } = watched(300);
    const hanging = client.send({ type: 'destroy' });
    await expect(hanging).rejects.toThrow(/exited/);
    await exited;
    expect(stuck).toHaveLength(1);
    expect(stuck[0]).toBeGreaterThanOrEqual(300);
  });
});
