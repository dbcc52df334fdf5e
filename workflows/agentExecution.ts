/**
 * @module agentExecution: one execution of an agent (workflow id `execution-<executionId>`).
 *
 * generateReply (marks the execution running, streams the model reply into the event log; retried after a worker
 * dies, continuing the reply where it stopped) → finish (completed | failed | cancelled: final events, chat message,
 * usage, session released). Finishing always runs, even after cancellation.
 *
 * Shape 4 (every start since it exists, docs/decisions.md "Execution shape 4"): both steps in ONE local activity,
 * runExecution (activities/executionRun.ts): the workflow is activated twice (start; the activity's result), the
 * outcome is written as soon as the reply ends. A reply that fails, or a finish that fails after it, takes the paths of
 * shape 3 below (the workflow's own finish).
 *
 * Shape 3 (docs/architecture.md §5, docs/decisions.md "Execution shape 3"): both steps are
 * local activities, so the whole execution is one workflow task of the process that started it (eager start). The
 * SDK heartbeats that task while the reply streams; the workflow task timeout (EXECUTION_TASK_TIMEOUT in workflows/ids.ts, set by
 * the starters) bounds how long a dead process goes unnoticed. A local activity sees Temporal's cancellation only
 * at such a heartbeat, so the cancel endpoint also aborts the call directly (lib/runningCalls.ts); the activity then
 * fails with {@link CANCELLED_BY_REQUEST}, which ends the execution as cancelled. The overall deadline is the
 * activity's own (`deadlineAt`): no timer in the history.
 *
 * Shapes 2 and older (histories recorded before, executions still running at an upgrade): the model call a regular
 * heartbeating activity, cancelled through Temporal; the deadline a workflow timer.
 *
 * The reply has an overall deadline (`deadlineSeconds`, EXECUTION_DEADLINE_SECONDS, every attempt and backoff
 * included): when it passes, the model call is aborted and the execution fails with a terminal `error` event,
 * which frees its session. Clients read failures in the service's words (workflows/failures.ts); the engine's own
 * failure (timeouts, driver errors) is logged with the execution id.
 */
import {
  ActivityCancellationType,
  CancellationScope,
  condition,
  isCancellation,
  log,
  patched,
  proxyActivities,
  proxyLocalActivities,
  setHandler,
  sleep,
  workflowInfo,
} from '@temporalio/workflow';
// Only import the activity types
import type { ExecutionActivities } from '../activities/executions';
import type { FinishOutcome } from '../activities/executionFinish';
import { clientFailure, deadlineMessage, FAILURES, isCancelledByRequest } from './failures';
import { EXECUTION_SHAPE } from './ids';
import { concurrencyGrantedSignal, type AgentExecutionInput, type AgentExecutionOutcome } from './definitions';

/** Deadline of executions started without one (by an api older than the deadline). */
const DEFAULT_DEADLINE_SECONDS = 600;

/** The short database step, as a regular activity (histories recorded before it became a local one). */
const { finishExecution: finishAsActivity } = proxyActivities<ExecutionActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '500 milliseconds', maximumAttempts: 20 },
});

/**
 * The short database step as a local activity: it runs in the worker that completes the workflow task, with no
 * activity task of its own for the server to schedule, dispatch and record (measured: docs/benchmarks.md). It is
 * idempotent, so the retry after a worker died in it is safe.
 */
const { finishExecution: finishLocally } = proxyLocalActivities<ExecutionActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '500 milliseconds', maximumAttempts: 20 },
});

/** The claim of an execution's concurrency keys (activities/executionConcurrency.ts): short, idempotent. */
const { claimConcurrency } = proxyLocalActivities<ExecutionActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '500 milliseconds', maximumAttempts: 20 },
});

/** A queued execution claims again this often when no signal came (a lost signal delays it at most this long). */
const CONCURRENCY_RECHECK = '10 seconds';

/**
 * Holds the execution's concurrency keys, waiting in their lines as long as it takes (until cancelled).
 * @param executionId the execution.
 * @throws the cancellation, when the execution is cancelled while it waits.
 */
async function holdConcurrencyKeys(executionId: string): Promise<void> {
  let woken = false;
  setHandler(concurrencyGrantedSignal, () => void (woken = true));
  while (!(await claimConcurrency(executionId))) {
    await condition(() => woken, CONCURRENCY_RECHECK);
    woken = false;
  }
}

type Finish = (
  input: Parameters<ExecutionActivities['finishExecution']>[0]
) => Promise<FinishOutcome | undefined | void>;

/**
 * @param recorded what the finish answered (nothing in histories recorded before it answered).
 * @param fallback the outcome this run decided.
 * @returns the outcome as the record holds it: a workflow task run again (a cancel arrived as it completed) ends
 * with what the first run recorded, not with the cancellation. The finish answers the reply only when it is not the
 * one it was given (issue 37: its marker does not repeat it); otherwise the reply is this run's.
 */
function asRecorded(
  recorded: FinishOutcome | undefined | void,
  fallback: AgentExecutionOutcome
): AgentExecutionOutcome {
  if (!recorded || !recorded.status) return fallback;
  const text = recorded.text ?? (recorded.status === fallback.status ? fallback.text : undefined);
  return { status: recorded.status, ...(text !== undefined ? { text } : {}) };
}

/** Histories recorded before the shape: the finish as they recorded it. */
const finishAsRecorded: Finish = (input) =>
  CancellationScope.nonCancellable(() =>
    patched('finish-local-activity') ? finishLocally(input) : finishAsActivity(input)
  );

/** The finish of the current shape: always local, never cancelled. */
const finishLocal: Finish = (input) => CancellationScope.nonCancellable(() => finishLocally(input));

/** Retries of the model call: transient provider errors before any output, with backoff. */
const REPLY_RETRY = {
  initialInterval: '1 second',
  backoffCoefficient: 2,
  maximumInterval: '10 seconds',
  maximumAttempts: 5,
} as const;

/** Time a local reply may run past the execution's deadline before the engine times it out (the reply stops itself). */
const LOCAL_REPLY_GRACE_SECONDS = 30;

/**
 * The model call of shapes 3 and 4, as a local activity (the model/tool loop of one reply, in the workflow task): it
 * enforces the deadline itself and is aborted directly on cancel; the engine's timeout is only a backstop.
 * @param deadlineSeconds the execution's deadline.
 * @returns the activities (shape 3: generateReply; shape 4: runExecution, the reply and its finish in one).
 */
function localReply(deadlineSeconds: number) {
  return proxyLocalActivities<ExecutionActivities>({
    startToCloseTimeout: `${deadlineSeconds + LOCAL_REPLY_GRACE_SECONDS} seconds`,
    scheduleToCloseTimeout: `${deadlineSeconds + LOCAL_REPLY_GRACE_SECONDS} seconds`,
    cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
    retry: REPLY_RETRY,
  });
}

/**
 * The model call of shapes 2 and older: long, heartbeating (a dead worker is noticed within 5 s), cancellable. Transient provider
 * errors before any output are retried with backoff; permanent ones are not (nonRetryable failures).
 */
const { generateReply } = proxyActivities<ExecutionActivities>({
  startToCloseTimeout: '15 minutes',
  heartbeatTimeout: '5 seconds',
  cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
  retry: REPLY_RETRY,
});

/**
 * Runs `fn` in its own cancellation scope, cancelled when `seconds` pass first.
 * @param seconds the deadline.
 * @param fn the work.
 * @returns the work's result, and whether the deadline cancelled it.
 */
async function withDeadline<T>(
  seconds: number,
  fn: () => Promise<T>
): Promise<{ value: T; timedOut: false } | { error: unknown; timedOut: boolean }> {
  let timedOut = false;
  const work = new CancellationScope();
  const timer = new CancellationScope();
  const expiry = timer
    .run(() => sleep(seconds * 1000))
    .then(
      () => {
        timedOut = true;
        work.cancel();
      },
      () => undefined // the timer was cancelled: the work ended first
    );
  try {
    return { value: await work.run(fn), timedOut: false };
  } catch (error) {
    return { error, timedOut };
  } finally {
    timer.cancel();
    await expiry;
  }
}

/**
 * @param input the execution id and its deadline.
 * @returns the final status.
 */
export async function agentExecution(input: AgentExecutionInput): Promise<AgentExecutionOutcome> {
  const { executionId } = input;
  const deadlineSeconds = input.deadlineSeconds ?? DEFAULT_DEADLINE_SECONDS;
  // Shape 4 (EXECUTION_SHAPE): the reply and its finish in one local activity; shape 3: two local activities.
  const whole = input.shape === EXECUTION_SHAPE;
  const local = whole || input.shape === 3;
  const finishExecution = local || input.shape === 2 ? finishLocal : finishAsRecorded;
  const settle = <T>(reply: Promise<T>) =>
    reply.then(
      (value) => ({ value, timedOut: false as const }),
      (error: unknown) => ({ error, timedOut: false })
    );
  // Concurrency keys first (docs/fairness.md): a cancel while queued ends it as cancelled, its keys released.
  if (input.concurrency) {
    try {
      await holdConcurrencyKeys(executionId);
    } catch (err) {
      if (!isCancellation(err)) throw err;
      return asRecorded(await finishExecution({ executionId, status: 'cancelled' }), { status: 'cancelled' });
    }
  }
  // Shape 3: the reply stops itself at the deadline (counted from the workflow's start, or from the moment it held
  // its concurrency keys, so a retry after a crash keeps it). Histories recorded before the deadline existed replay
  // without its timer.
  const runFrom = input.concurrency ? Date.now() : workflowInfo().runStartTime.getTime();
  const limits = { deadlineAt: runFrom + deadlineSeconds * 1000, deadlineSeconds };
  const outcome = whole
    ? await settle(localReply(deadlineSeconds).runExecution(executionId, limits))
    : local
      ? await settle(localReply(deadlineSeconds).generateReply(executionId, limits))
      : input.shape === 2 || patched('execution-deadline')
        ? await withDeadline(deadlineSeconds, () => generateReply(executionId))
        : await settle(generateReply(executionId));
  if ('value' in outcome) {
    // Shape 4: the activity finished it (else its finish failed, and the finish below records the reply it answered).
    if ('finished' in outcome.value && outcome.value.finished)
      return asRecorded(outcome.value.finished, { status: 'completed', text: outcome.value.text });
    const reply = outcome.value as Awaited<ReturnType<ExecutionActivities['generateReply']>>;
    // lastSeq and attemptUsage are undefined in histories recorded before generateReply returned them: finish then
    // reads the stream, and the attempt had saved its counts itself.
    const recorded = await finishExecution({
      executionId,
      status: 'completed',
      text: reply.text,
      lastSeq: reply.lastSeq,
      held: reply.held,
      attemptUsage: reply.attemptUsage,
    });
    return asRecorded(recorded, { status: 'completed', text: reply.text });
  }
  const err = outcome.error;
  if (outcome.timedOut) {
    log.warn('execution deadline exceeded', { executionId, deadlineSeconds });
    const recorded = await finishExecution({
      executionId,
      status: 'failed',
      error: deadlineMessage(deadlineSeconds),
      errorCode: FAILURES.deadlineExceeded.code,
    });
    return asRecorded(recorded, { status: 'failed' });
  }
  if (isCancellation(err) || isCancelledByRequest(err)) {
    return asRecorded(await finishExecution({ executionId, status: 'cancelled' }), { status: 'cancelled' });
  }
  const failure = clientFailure(err);
  // The engine's own account (e.g. "activity Heartbeat timeout", a driver error) is for operators only.
  log.warn('execution failed', { executionId, code: failure.code, cause: describe(err) });
  const recorded = asRecorded(
    await finishExecution({ executionId, status: 'failed', error: failure.message, errorCode: failure.code }),
    { status: 'failed' }
  );
  return recorded.status === 'failed' && failure.code === FAILURES.budgetReached.code
    ? { ...recorded, reason: 'budget_reached' }
    : recorded;
}

/**
 * @param err a failure.
 * @returns its messages, outermost first (for the log).
 */
function describe(err: unknown): string {
  const parts: string[] = [];
  for (let e = err as { message?: unknown; cause?: unknown } | undefined, i = 0; e && i < 10; i++) {
    if (typeof e.message === 'string') parts.push(e.message);
    e = e.cause as typeof e;
  }
  return parts.join(' <- ');
}
