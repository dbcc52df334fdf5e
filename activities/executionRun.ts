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
import { Context } from '@temporalio/activity';
import type { Client } from '@temporalio/client';
import type { ActivityCancellationDetails } from '@temporalio/common';
import { onEagerStart } from '../commands/executionClaim';
import type { Logger } from '../lib/logger';
import { repliesBegunEarly } from '../lib/metrics';
import { detachedFromRequestDeadline } from '../lib/requestDeadline';
import type { FinishInput, FinishOutcome } from './executionFinish';
import type { ReplyLimits, ReplyOutcome } from './executionReply';
import type { ReplyContext } from './executionTools';

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
 * How long a reply begun early waits for its local activity to take it over. The workflow task that schedules the
 * activity is this process's (eager start), and nothing heartbeats it before the activity runs: past this (well inside
 * the task's timeout, EXECUTION_TASK_TIMEOUT, 5 s), the early reply stops, so that the task run again elsewhere never
 * meets a reply still running here. Its activity, wherever it runs, continues what it wrote (as after a crash).
 */
export const ADOPT_WITHIN_MS = 3000;

/** A reply begun by this process's eager start, until its local activity takes it over. */
interface EarlyRun {
  outcome: Promise<RunOutcome>;
  /** Aborts it (its context's cancellation signal). */
  stop: AbortController;
  /** Why it was stopped, as its activity's context says (a worker shutting down), for the reply's failure. */
  details?: ActivityCancellationDetails;
  /** Stopped because no activity took it over in time: the activity runs the reply itself, after it. */
  abandoned: boolean;
  timer: NodeJS.Timeout;
}

/** Early replies of this process, by execution id. */
const early = new Map<string, EarlyRun>();

/**
 * @param generateReply the reply activity.
 * @param finishExecution the finish activity.
 * @param log the execution activities' logger.
 * @param client the client a reply begun early starts sub-agents with (the worker's; absent: none begins early).
 * @returns runExecution.
 */
export function createRunExecution(
  generateReply: (executionId: string, limits?: ReplyLimits, ctx?: ReplyContext) => Promise<ReplyOutcome>,
  finishExecution: (input: FinishInput) => Promise<FinishOutcome>,
  log: Logger,
  client?: Client
) {
  /**
   * Runs the reply, then finishes the execution as completed.
   * @returns the finish's outcome with the reply, or the reply alone when the finish failed.
   */
  async function run(executionId: string, limits: ReplyLimits, ctx: ReplyContext): Promise<RunOutcome> {
    const reply = await generateReply(executionId, limits, ctx);
    try {
      const finished = await finishExecution({ executionId, status: 'completed', ...reply });
      return { finished, text: reply.text };
    } catch (err) {
      // The workflow finishes it (a local activity of its own, with retries): the reply is not run again.
      log.warn({ err, executionId }, 'finish after the reply failed; the workflow finishes the execution');
      return reply;
    }
  }

  if (client)
    onEagerStart((executionId, limits) => {
      const stop = new AbortController();
      const entry = { stop, abandoned: false } as EarlyRun;
      const ctx: ReplyContext = {
        // The first attempt of a local activity, as the one that takes it over will be.
        info: { attempt: 1, isLocal: true },
        heartbeat: () => undefined,
        cancellationSignal: stop.signal,
        get cancellationDetails() {
          return entry.details;
        },
        client,
      };
      // Begun now (it takes the record handed over here synchronously, in its claim), outside the request's deadline.
      entry.outcome = detachedFromRequestDeadline(() => run(executionId, limits, ctx));
      entry.outcome.catch(() => undefined); // its activity sees the failure when it takes it over
      entry.timer = setTimeout(() => {
        entry.abandoned = true;
        stop.abort(new Error('No activity took the reply over'));
        // Kept until it settled, for an activity that comes later to wait for its writes.
        entry.outcome.then(
          () => early.delete(executionId),
          () => early.delete(executionId)
        );
      }, ADOPT_WITHIN_MS);
      entry.timer.unref();
      early.set(executionId, entry);
      repliesBegunEarly.inc();
    });

  /**
   * Runs the execution: takes over its reply begun early by this process's eager start (the first attempt), else
   * runs the reply here.
   * @param executionId the execution.
   * @param limits its deadline.
   * @returns the finish's outcome with the reply, or the reply alone when the finish failed.
   */
  return async function runExecution(executionId: string, limits: ReplyLimits): Promise<RunOutcome> {
    const ctx = Context.current();
    const begun = ctx.info.attempt === 1 ? early.get(executionId) : undefined;
    if (begun) {
      early.delete(executionId);
      clearTimeout(begun.timer);
      if (!begun.abandoned) {
        // Temporal's cancellation (or a worker shutting down) reaches the reply through its early context.
        const forward = (): void => {
          begun.details = ctx.cancellationDetails;
          begun.stop.abort(ctx.cancellationSignal.reason);
        };
        if (ctx.cancellationSignal.aborted) forward();
        else ctx.cancellationSignal.addEventListener('abort', forward, { once: true });
        try {
          return await begun.outcome;
        } finally {
          ctx.cancellationSignal.removeEventListener('abort', forward);
        }
      }
      // Stopped before this activity came: its writes are done before this attempt reads the stream back.
      await begun.outcome.catch(() => undefined);
    }
    return run(executionId, limits, ctx);
  };
}
