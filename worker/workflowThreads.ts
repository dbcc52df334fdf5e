/**
 * The worker's workflow threads, without a timer thread per call into the workflow sandbox (issue 37 lever 4;
 * docs/decisions.md "Workflow threads without a timer thread per call").
 *
 * The SDK runs workflow code in a `vm` context on its own thread and passes its deadlock timeout
 * (`isolateExecutionTimeout`, 5 s) to every call into the context. Node enforces a `vm` timeout by starting a
 * watchdog thread for the call and joining it after (nodejs/node#47739 proposes one thread per caller; not merged):
 * about a dozen thread starts and joins per execution, measured at 2.6–3.4 ms of the service process's CPU per
 * execution and 12 % of its JSON rate (docs/benchmarks.md). No option of SDK 1.24 turns it off.
 *
 * Here the workflow threads are the SDK's own (its thread module, its thread client, its workflow creator), started
 * with one line before it: calls into the context carry no timeout. The deadlock they guarded against is watched
 * from this thread instead, by progress: a workflow thread that has requests in flight and has answered none for
 * {@link STUCK_AFTER_MS} is terminated, which the SDK treats as it treats a workflow thread that died (the worker
 * shuts down, its process exits, and its workflow tasks run elsewhere: docs/architecture.md §1).
 */
import { Worker as NodeWorker } from 'node:worker_threads';
import { Worker } from '@temporalio/worker';
import type { CompiledWorkerOptions } from '@temporalio/worker/lib/worker-options';
import type { WorkflowCreator } from '@temporalio/worker/lib/workflow/interface';
import { ThreadedVMWorkflowCreator, WorkerThreadClient } from '@temporalio/worker/lib/workflow/threaded-vm';
import type { WorkflowBundleWithSourceMapAndFilename } from '@temporalio/worker/lib/workflow/workflow-worker-thread/input';
import type { Logger } from '@temporalio/common';

/** A workflow thread with requests in flight that answers none for this long is stuck (the SDK's own timeout). */
export const STUCK_AFTER_MS = 5000;
/** How often the workflow threads' progress is checked. */
const CHECK_EVERY_MS = 1000;

/** The thread's code: `vm` calls without their timeout, then the SDK's workflow thread module. */
const THREAD_CODE = `
const vm = require('node:vm');
const runInContext = vm.Script.prototype.runInContext;
vm.Script.prototype.runInContext = function (context, options) {
  if (options === undefined || options.timeout === undefined) return runInContext.call(this, context, options);
  const { timeout, ...rest } = options;
  return runInContext.call(this, context, rest);
};
require(${JSON.stringify(require.resolve('@temporalio/worker/lib/workflow/workflow-worker-thread'))});
`;

/**
 * Watches a workflow thread's progress: terminates it once it has had requests in flight and answered none for
 * `stuckAfterMs`.
 * @param client the SDK's client of the thread (its `send` is wrapped).
 * @param thread the thread.
 * @param onStuck told before the thread is terminated.
 * @param stuckAfterMs the limit (tests).
 */
export function watchProgress(
  client: WorkerThreadClient,
  thread: NodeWorker,
  onStuck: (idleMs: number) => void,
  stuckAfterMs = STUCK_AFTER_MS
): void {
  let inFlight = 0;
  let lastProgress = Date.now();
  const send = client.send.bind(client);
  client.send = async (input) => {
    if (inFlight++ === 0) lastProgress = Date.now();
    try {
      return await send(input);
    } finally {
      inFlight--;
      lastProgress = Date.now();
    }
  };
  const every = Math.min(CHECK_EVERY_MS, stuckAfterMs);
  let lastCheck = Date.now();
  const timer = setInterval(() => {
    const now = Date.now();
    // A check that runs late finds this thread's own event loop was blocked: the answers of that time are still
    // queued behind this timer (timers run before messages are read), so the count starts again.
    if (now - lastCheck > 2 * every) lastProgress = now;
    lastCheck = now;
    const idle = now - lastProgress;
    if (inFlight === 0 || idle < stuckAfterMs) return;
    clearInterval(timer);
    onStuck(idle);
    void thread.terminate();
  }, every);
  timer.unref();
  thread.once('exit', () => clearInterval(timer));
}

/** The SDK's Worker, its workflow threads started as this module starts them. */
export class ServiceWorker extends Worker {
  /** How long a workflow thread with work may answer nothing ({@link STUCK_AFTER_MS}; a test's subclass lowers it). */
  static stuckAfterMs = STUCK_AFTER_MS;

  protected static override async createWorkflowCreator(
    workflowBundle: WorkflowBundleWithSourceMapAndFilename,
    compiledOptions: CompiledWorkerOptions,
    logger: Logger
  ): Promise<WorkflowCreator> {
    // The debug mode runs workflows on the calling thread (a debugger's): the SDK's own way.
    if (compiledOptions.debugMode) return super.createWorkflowCreator(workflowBundle, compiledOptions, logger);
    const threads = Array.from({ length: compiledOptions.workflowThreadPoolSize }, () => {
      const thread = new NodeWorker(THREAD_CODE, { eval: true });
      return { thread, client: new WorkerThreadClient(thread, logger, compiledOptions.patchActivationCallback) };
    });
    const clients = threads.map(({ client }) => client);
    // As the SDK's ThreadedVMWorkflowCreator.create initialises its threads.
    await Promise.all(
      clients.map((client) =>
        client.send({
          type: 'init',
          workflowBundle,
          isolateExecutionTimeoutMs: compiledOptions.isolateExecutionTimeoutMs,
          reuseV8Context: compiledOptions.reuseV8Context ?? true,
          registeredActivityNames: new Set(compiledOptions.activities.keys()),
          hasPatchActivationCallback: compiledOptions.patchActivationCallback !== undefined,
        })
      )
    );
    // Watched once initialised: loading the workflow bundle is not a workflow's work.
    for (const { thread, client } of threads)
      watchProgress(
        client,
        thread,
        (idleMs) =>
          logger.error('A workflow thread answered nothing while it had work: terminating it (the worker shuts down)', {
            idleMs,
          }),
        this.stuckAfterMs
      );
    return new ThreadedVMWorkflowCreator(clients);
  }
}
