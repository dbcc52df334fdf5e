/**
 * Direct cancel (docs/architecture.md §5; docs/decisions.md "Execution shape 3"): the model and tool calls of an execution
 * run as local activities, which see Temporal's cancellation only when their workflow task ends (at the SDK's next
 * heartbeat of it, seconds later). So each running reply registers an AbortController here, under its execution id,
 * and the cancel endpoint aborts it at once:
 *
 * - in the process that took the cancel, when the reply runs there ({@link abortRunningCall});
 * - otherwise over the wake-up channel (lib/wakeups.ts): an `abort:<executionId>` message reaches every process,
 *   and the one running the reply aborts it ({@link onAbortRequest}) once it has confirmed in the database that a
 *   cancel was requested (a notification carries no authority: a forged datagram costs at most a read).
 *
 * Temporal's cancellation is requested as well, so nothing resumes the reply after a crash.
 */
import { broadcastInvalidations, onInvalidation } from './wakeups';

/** Prefix of the wake-up channel's abort messages (the channel ignores names it does not know). */
const ABORT_PREFIX = 'abort:';

const running = new Map<string, AbortController>();

/**
 * Registers the reply running for an execution in this process.
 * @param executionId the execution.
 * @param controller aborted by a cancel.
 * @returns unregisters it (call when the reply ends).
 */
export function registerRunningCall(executionId: string, controller: AbortController): () => void {
  running.set(executionId, controller);
  return () => {
    if (running.get(executionId) === controller) running.delete(executionId);
  };
}

/**
 * @param executionId the execution.
 * @returns whether its reply runs in this process now.
 */
export function runsHere(executionId: string): boolean {
  return running.has(executionId);
}

/**
 * Aborts the execution's reply when it runs in this process.
 * @param executionId the execution.
 * @returns whether it ran here.
 */
export function abortRunningCall(executionId: string): boolean {
  const controller = running.get(executionId);
  if (!controller) return false;
  controller.abort(new Error('Execution cancelled'));
  return true;
}

/**
 * Asks every other process to abort the execution's reply (they confirm the request before acting).
 * @param executionId the execution.
 * @returns resolves once sent (or given up); never rejects.
 */
export function broadcastAbort(executionId: string): Promise<void> {
  return broadcastInvalidations([`${ABORT_PREFIX}${executionId}`]);
}

/**
 * Tells a listener of every abort request this process hears from another process, before any check: what it does
 * must be harmless when the request is forged (commands/executionClaim.ts drops a hand-over: a claim in the database
 * instead).
 * @param listener called with the execution named.
 */
export function onAbortMessage(listener: (executionId: string) => void): void {
  onInvalidation((message) => {
    if (message.startsWith(ABORT_PREFIX)) listener(message.slice(ABORT_PREFIX.length));
  });
}

let confirmHandler: ((executionId: string) => Promise<boolean>) | undefined;

/**
 * Lets this process act on abort requests from other processes (once per process; a later call replaces the check).
 * @param confirm reads whether a cancel of the execution was really requested.
 * @param onError told when the confirmation cannot be read.
 */
export function onAbortRequest(
  confirm: (executionId: string) => Promise<boolean>,
  onError: (err: unknown) => void = () => undefined
): void {
  const first = confirmHandler === undefined;
  confirmHandler = confirm;
  if (!first) return;
  onInvalidation((message) => {
    if (!message.startsWith(ABORT_PREFIX)) return;
    const executionId = message.slice(ABORT_PREFIX.length);
    if (!running.has(executionId)) return;
    confirmHandler!(executionId).then((yes) => {
      if (yes) abortRunningCall(executionId);
    }, onError);
  });
}
