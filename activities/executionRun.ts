/**
 * runExecution, the one local activity of an execution of shape 4 (workflows/agentExecution.ts): the reply
 * (activities/executionReply.ts) and, once it completed, its finish (activities/executionFinish.ts), in one activity.
 * The workflow then schedules one local activity instead of two and is activated twice instead of three times, and the
 * outcome (the terminal event a client waits for) is written as soon as the reply ends, not after a round trip through
 * the workflow (issue 37: the engine's share and the first token; docs/decisions.md "Execution shape 4").
 *
 * Failures keep the paths of shape 3: a reply that fails throws as generateReply does (retried, then finished as
 * failed or cancelled by the workflow's own finish); a finish that fails after the reply completed is left to the
 * workflow, which runs finishExecution with the reply this answers (the model is never called again for it).
 */
import type { Logger } from '../lib/logger';
import type { FinishInput, FinishOutcome } from './executionFinish';
import type { ReplyLimits, ReplyOutcome } from './executionReply';

/** What runExecution answers: the finish's outcome, or the reply for the workflow's own finish. */
export type RunOutcome =
  | {
      /** What the finish recorded. */
      finished: FinishOutcome;
      /** The whole reply (the workflow's result). */
      text: string;
    }
  | (ReplyOutcome & { finished?: undefined });

/**
 * @param generateReply the reply activity.
 * @param finishExecution the finish activity.
 * @param log the execution activities' logger.
 * @returns runExecution.
 */
export function createRunExecution(
  generateReply: (executionId: string, limits?: ReplyLimits) => Promise<ReplyOutcome>,
  finishExecution: (input: FinishInput) => Promise<FinishOutcome>,
  log: Logger
) {
  /**
   * Runs the reply, then finishes the execution as completed.
   * @param executionId the execution.
   * @param limits its deadline.
   * @returns the finish's outcome with the reply, or the reply alone when the finish failed.
   */
  return async function runExecution(executionId: string, limits: ReplyLimits): Promise<RunOutcome> {
    const reply = await generateReply(executionId, limits);
    try {
      const finished = await finishExecution({ executionId, status: 'completed', ...reply });
      return { finished, text: reply.text };
    } catch (err) {
      // The workflow finishes it (a local activity of its own, with retries): the reply is not run again.
      log.warn({ err, executionId }, 'finish after the reply failed; the workflow finishes the execution');
      return reply;
    }
  };
}
