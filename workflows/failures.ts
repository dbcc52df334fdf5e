/**
 * What a client reads when an execution fails (docs/architecture.md §7, docs/decisions.md "Failure messages"): the
 * service's own words, one code per kind of failure. Activities throw ApplicationFailures whose `type` is one of
 * these codes and whose message is the client's message; anything else (engine timeouts, database or driver
 * errors, raw provider bodies) becomes `internal_error` for clients and goes to the logs with the execution id.
 * Pure and deterministic: imported by the workflow and by the activities.
 */

/** The message a cancelled execution records and ends its stream with (its `error` event carries no code). */
export const CANCELLED_MESSAGE = 'Execution cancelled';

export const FAILURES = {
  /** No event from the model within the idle timeout (before or during the reply). */
  providerTimeout: { code: 'provider_timeout', message: 'The model provider did not respond' },
  /** 429 / 5xx / network errors before any output, after every retry. */
  providerUnavailable: { code: 'provider_unavailable', message: 'The model provider is unavailable' },
  /** A transient provider error after output started (no retry: the text delivered so far is kept). */
  providerInterrupted: {
    code: 'provider_interrupted',
    message: 'The model provider stopped in the middle of the reply',
  },
  /** A provider 4xx (bad model, bad request, bad key): its own message is appended. */
  providerRejected: { code: 'provider_rejected', message: 'The model provider rejected the request' },
  /** The execution's provider is no longer configured on this service (its key was removed). */
  providerNotConfigured: {
    code: 'provider_not_configured',
    message: 'The model provider of this agent is not configured on this service',
  },
  /** The agent was removed while its execution was pending. */
  agentNotFound: { code: 'agent_not_found', message: 'The agent no longer exists' },
  /** The execution ran past EXECUTION_DEADLINE_SECONDS. */
  deadlineExceeded: { code: 'deadline_exceeded', message: 'The execution did not finish within its time limit' },
  /**
   * A budget covering the execution (or its own per-run cap) is spent: it stopped before its next model call
   * (docs/spend.md). A job's iteration stopped so pauses its job as `needs_attention`.
   */
  budgetReached: { code: 'budget_reached', message: 'The budget for this work is spent' },
  /** Anything else: the details are in the logs. */
  internal: { code: 'internal_error', message: 'Chat execution failed' },
} as const;

export type FailureCode = (typeof FAILURES)[keyof typeof FAILURES]['code'];

const CLIENT_CODES: ReadonlySet<string> = new Set(Object.values(FAILURES).map((f) => f.code));

/**
 * @param providerMessage the provider's own message (never its raw body), if it gave one.
 * @returns the client's message for a rejected request.
 */
export function rejectedMessage(providerMessage: string | undefined): string {
  const text = providerMessage?.trim().slice(0, 500);
  return text ? `${FAILURES.providerRejected.message}: ${text}` : FAILURES.providerRejected.message;
}

/**
 * @param seconds the deadline.
 * @returns the client's message for an execution that ran out of time.
 */
export function deadlineMessage(seconds: number): string {
  return `${FAILURES.deadlineExceeded.message} of ${seconds} s`;
}

interface FailureLike {
  type?: unknown;
  message?: unknown;
  cause?: unknown;
}

/**
 * The client's view of a failure: the innermost failure thrown with one of the codes above, else internal_error.
 * @param err what the workflow caught (an ActivityFailure wrapping the activity's ApplicationFailure, a
 *   TimeoutFailure, ...).
 * @returns the code and message to record and stream.
 */
export function clientFailure(err: unknown): { code: FailureCode; message: string } {
  for (let f = err as FailureLike | undefined, depth = 0; f && typeof f === 'object' && depth < 10; depth++) {
    if (typeof f.type === 'string' && CLIENT_CODES.has(f.type) && typeof f.message === 'string')
      return { code: f.type as FailureCode, message: f.message };
    f = f.cause as FailureLike | undefined;
  }
  return { ...FAILURES.internal };
}

/**
 * The `type` of the failure a model call throws when the cancel endpoint aborted it directly (shape 3: its local
 * activity cannot see Temporal's cancellation until its workflow task ends; lib/runningCalls.ts).
 */
export const CANCELLED_BY_REQUEST = 'ExecutionCancelled';

/**
 * @param err what the workflow caught.
 * @returns whether it is (or wraps) a call aborted by the cancel endpoint.
 */
export function isCancelledByRequest(err: unknown): boolean {
  for (let f = err as FailureLike | undefined, depth = 0; f && typeof f === 'object' && depth < 10; depth++) {
    if (f.type === CANCELLED_BY_REQUEST) return true;
    f = f.cause as FailureLike | undefined;
  }
  return false;
}
