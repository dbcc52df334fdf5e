/**
 * @module agentExecution: one execution of an agent (workflow id `execution-<executionId>`).
 *
 * generateReply (marks the execution running, streams the model reply into the event log; heartbeats; retried
 * after a worker dies, continuing the reply where it stopped) → finish (completed | failed | cancelled: final events,
 * chat message, usage, session released). Cancelling the workflow cancels the model call (the activity sees it
 * through its heartbeat and aborts the provider request); finishing always runs, even after cancellation.
 */
import {
  ActivityCancellationType,
  ApplicationFailure,
  CancellationScope,
  isCancellation,
  proxyActivities,
} from '@temporalio/workflow';
// Only import the activity types
import type { ExecutionActivities } from '../activities/executions';

export interface AgentExecutionInput {
  executionId: string;
}

export interface AgentExecutionOutcome {
  status: 'completed' | 'failed' | 'cancelled';
}

/** The short database step. */
const { finishExecution } = proxyActivities<ExecutionActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '500 milliseconds', maximumAttempts: 20 },
});

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

function failureMessage(err: unknown): string {
  let cause: unknown = err;
  while (cause && typeof cause === 'object' && 'cause' in cause && (cause as { cause?: unknown }).cause) {
    cause = (cause as { cause: unknown }).cause;
  }
  if (cause instanceof ApplicationFailure || cause instanceof Error) return cause.message;
  return 'Chat execution failed';
}

/**
 * @param input the execution id.
 * @returns the final status.
 */
export async function agentExecution(input: AgentExecutionInput): Promise<AgentExecutionOutcome> {
  const { executionId } = input;
  try {
    const reply = await generateReply(executionId);
    await CancellationScope.nonCancellable(() =>
      finishExecution({ executionId, status: 'completed', text: reply.text })
    );
    return { status: 'completed' };
  } catch (err) {
    if (isCancellation(err)) {
      await CancellationScope.nonCancellable(() => finishExecution({ executionId, status: 'cancelled' }));
      return { status: 'cancelled' };
    }
    await CancellationScope.nonCancellable(() =>
      finishExecution({ executionId, status: 'failed', error: failureMessage(err) })
    );
    return { status: 'failed' };
  }
}
