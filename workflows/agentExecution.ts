/**
 * @module agentExecution: one execution of an agent (workflow id `execution-<executionId>`).
 *
 * generateReply (marks the execution running, streams the model reply into the event log; heartbeats; retried
 * after a worker dies, continuing the reply where it stopped) → finish (completed | failed | cancelled: final events,
 * chat message, usage, session released). Cancelling the workflow cancels the model call (the activity sees it
 * through its heartbeat and aborts the provider request); finishing always runs, even after cancellation.
 *
 * The reply has an overall deadline (`deadlineSeconds`, EXECUTION_DEADLINE_SECONDS, every attempt and backoff
 * included): when it passes, the model call is cancelled and the execution fails with a terminal `error` event,
 * which frees its session. Clients read failures in the service's words (workflows/failures.ts); the engine's own
 * failure (timeouts, driver errors) is logged with the execution id.
 */
import {
  ActivityCancellationType,
  CancellationScope,
  isCancellation,
  log,
  patched,
  proxyActivities,
  proxyLocalActivities,
  sleep,
} from '@temporalio/workflow';
// Only import the activity types
import type { ExecutionActivities } from '../activities/executions';
import { clientFailure, deadlineMessage, FAILURES } from './failures';
import { EXECUTION_SHAPE } from './ids';

export interface AgentExecutionInput {
  executionId: string;
  /** Overall deadline of the reply in seconds (EXECUTION_DEADLINE_SECONDS when the api started it). */
  deadlineSeconds?: number;
  /**
   * 2 (every start since it existed, {@link EXECUTION_SHAPE}): the deadline timer and the local finish with no
   * patch checks. Each `patched()` call writes a marker and a search-attribute upsert into the history, four events
   * of eighteen per execution. Absent: a history recorded before, replayed through its patches as recorded.
   */
  shape?: 2;
}

/** Deadline of executions started without one (by an api older than the deadline). */
const DEFAULT_DEADLINE_SECONDS = 600;

export interface AgentExecutionOutcome {
  status: 'completed' | 'failed' | 'cancelled';
  /** The reply (completed executions), so the api answers a JSON execute without reading it back. */
  text?: string;
}

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

type Finish = (input: Parameters<ExecutionActivities['finishExecution']>[0]) => Promise<void>;

/** Histories recorded before the shape: the finish as they recorded it. */
const finishAsRecorded: Finish = (input) =>
  CancellationScope.nonCancellable(() =>
    patched('finish-local-activity') ? finishLocally(input) : finishAsActivity(input)
  );

/** The finish of the current shape: always local, never cancelled. */
const finishLocal: Finish = (input) => CancellationScope.nonCancellable(() => finishLocally(input));

/**
 * The model call: long, heartbeating (a dead worker is noticed within 5 s), cancellable. Transient provider
 * errors before any output are retried with backoff; permanent ones are not (nonRetryable failures).
 */
const { generateReply } = proxyActivities<ExecutionActivities>({
  startToCloseTimeout: '15 minutes',
  heartbeatTimeout: '5 seconds',
  cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '10 seconds', maximumAttempts: 5 },
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
  const current = input.shape === EXECUTION_SHAPE;
  const finishExecution = current ? finishLocal : finishAsRecorded;
  // Histories recorded before the deadline existed replay without its timer.
  const outcome =
    current || patched('execution-deadline')
      ? await withDeadline(deadlineSeconds, () => generateReply(executionId))
      : await generateReply(executionId).then(
          (value) => ({ value, timedOut: false as const }),
          (error: unknown) => ({ error, timedOut: false })
        );
  if ('value' in outcome) {
    // lastSeq and attemptUsage are undefined in histories recorded before generateReply returned them: finish then
    // reads the stream, and the attempt had saved its counts itself.
    await finishExecution({
      executionId,
      status: 'completed',
      text: outcome.value.text,
      lastSeq: outcome.value.lastSeq,
      attemptUsage: outcome.value.attemptUsage,
    });
    return { status: 'completed', text: outcome.value.text };
  }
  const err = outcome.error;
  if (outcome.timedOut) {
    log.warn('execution deadline exceeded', { executionId, deadlineSeconds });
    await finishExecution({
      executionId,
      status: 'failed',
      error: deadlineMessage(deadlineSeconds),
      errorCode: FAILURES.deadlineExceeded.code,
    });
    return { status: 'failed' };
  }
  if (isCancellation(err)) {
    await finishExecution({ executionId, status: 'cancelled' });
    return { status: 'cancelled' };
  }
  const failure = clientFailure(err);
  // The engine's own account (e.g. "activity Heartbeat timeout", a driver error) is for operators only.
  log.warn('execution failed', { executionId, code: failure.code, cause: describe(err) });
  await finishExecution({ executionId, status: 'failed', error: failure.message, errorCode: failure.code });
  return { status: 'failed' };
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
