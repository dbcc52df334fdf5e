/**
 * @module job: one job (workflow id `job-<jobId>`), the source of truth of its state (workflows/jobStates.ts).
 *
 * created (queued) → iteration: an agent execution in the job's own chat session, run as child workflow
 * `execution-<executionId>` (the same engine as chats: cancellation, crash recovery and usage work alike) → the
 * reply decides the next state (review requested → awaiting_review, input requested → blocked, else completed;
 * a failed iteration → failed) → a client's action (approve, iterate, resume, cancel: Temporal updates) moves it on.
 *
 * Every transition goes through {@link move}: the workflow changes its state, then the `mirrorJobTransition`
 * activity writes it to MongoDB, the job's event stream and the service events (keyed by the transition's number,
 * so a retried activity records nothing twice). An update returns once the transition it caused is mirrored, so a
 * client reading the job right after its action sees the state the action returned.
 */
import {
  ApplicationFailure,
  CancellationScope,
  condition,
  executeChild,
  isCancellation,
  ParentClosePolicy,
  patched,
  proxyActivities,
  setHandler,
  uuid4,
} from '@temporalio/workflow';
import type { ExecutionActivities } from '../activities/executions';
import type { JobActivities, MirrorInput } from '../activities/jobs';
import type { AgentExecutionOutcome, AgentExecutionWorkflow, JobDecisionInput } from './definitions';
import {
  budgetChangedSignal,
  JOB_PAYLOAD_INVALID,
  JOB_STATE_CONFLICT,
  jobDecideUpdate,
  jobStatusQuery,
  jobUpdates,
  type JobActionInput,
  type JobView,
} from './definitions';
import { executionStartOptions } from './executionStart';
import {
  acceptsAction,
  JOB_ACTIONS,
  parseReplyRequest,
  TERMINAL_JOB_STATUSES,
  type JobAction,
  type JobStatus,
} from './jobStates';
import type { ReviewSpec } from './reviews';
import { reviewPayloadChecker } from './reviewValidation';

export interface JobInput {
  jobId: string;
  organizationId: string;
  agentId: string;
  /** Deadline of each iteration's reply (EXECUTION_DEADLINE_SECONDS). */
  deadlineSeconds: number;
  /** What its reviews wait for and their deadline (workflows/reviews.ts); absent: built-in actions, no deadline. */
  review?: ReviewSpec;
  /**
   * A rerun's (commands/jobReruns.ts): the iterations before `iteration` are the original job's, taken over as
   * recorded (already in the job's record); the workflow starts at `iteration`, run for `reason` with `input`, whose
   * execution the iteration's preparation seeds with the original's steps before the chosen one.
   */
  rerun?: { iteration: number; reason: NextIteration['reason']; input: string };
  /**
   * Its iterations hold the job's concurrency key before each runs (Job.concurrency; docs/fairness.md "Concurrency
   * keys"): each iteration's execution is started with AgentExecutionInput `concurrency`. Absent: none.
   */
  concurrency?: boolean;
}

const { mirrorJobTransition, mirrorReviewOverdue, prepareIteration } = proxyActivities<JobActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '500 milliseconds', maximumAttempts: 20 },
});
/** Ends an iteration whose execution never ran (cancelled before its child started); a no-op once it finished. */
const { finishExecution } = proxyActivities<ExecutionActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '500 milliseconds', maximumAttempts: 20 },
});

/** A decision taken on a waiting job: by a person (an update) or by a review's deadline. */
interface Decision {
  action: JobAction | string;
  text: string;
  payload?: Record<string, unknown>;
  by?: string;
  /** A declared action's effect. */
  effect?: 'complete' | 'iterate';
  /** Taken by the review's deadline (auto_approve), not by a person. */
  auto?: boolean;
}

/** The payload of a built-in action sent as text (before typed reviews, and by the routes). */
function payloadOf(action: JobAction, args: JobActionInput | undefined): Record<string, unknown> {
  if (args?.payload) return args.payload;
  const field = action === 'approve' ? 'next_step' : action === 'iterate' ? 'feedback' : 'input';
  return args?.text === undefined ? {} : { [field]: args.text };
}

/** Why the next iteration runs, and the human's text. */
interface NextIteration {
  reason: 'goal' | 'feedback' | 'input' | 'next_step';
  text: string;
}

/**
 * @param input the job and where its iterations run.
 * @returns the job's final state.
 */
export async function job(input: JobInput): Promise<JobView> {
  const { jobId } = input;
  let status: JobStatus = 'queued';
  let transition = 0;
  let mirrored = 0;
  let streamSeq = 0;
  let iterations = input.rerun ? input.rerun.iteration - 1 : 0;
  let pending: Decision | null = null;
  let cancelRequested = false;
  let iterationScope: CancellationScope | undefined;
  // A spent budget paused the job (needs_attention); the budget's change signals (commands/budgets.ts).
  let budgetChanged = false;
  setHandler(budgetChangedSignal, () => void (budgetChanged = true));
  const view = (): JobView => ({ id: jobId, status, transition: mirrored, iterations });

  setHandler(jobStatusQuery, view);
  const checkPayload = reviewPayloadChecker(input.review);
  /** Refuses an action the job's state does not take, or a second decision on the same wait (409). */
  const refuseConflict = (action: string, accepted: boolean): void => {
    if (accepted && pending === null && !cancelRequested) return;
    throw ApplicationFailure.create({
      type: JOB_STATE_CONFLICT,
      message:
        pending !== null && action !== 'cancel'
          ? `Cannot ${action} a job that is ${status}: a decision (${pending.action}) was already taken`
          : `Cannot ${action} a job that is ${status}`,
      details: [status],
      nonRetryable: true,
    });
  };
  /** Refuses a payload its action's schema does not accept (400), before anything changes. */
  const refusePayload = (action: string, payload: unknown): void => {
    const problem = checkPayload(action, payload);
    if (problem) throw ApplicationFailure.create({ type: JOB_PAYLOAD_INVALID, message: problem, nonRetryable: true });
  };
  /** An update's answer: once the transition it caused is mirrored. */
  const settled = (from: JobStatus, action: string) =>
    condition(() => status !== from && mirrored === transition && (action !== 'cancel' || status === 'cancelled'));
  for (const action of JOB_ACTIONS) {
    setHandler(
      jobUpdates[action],
      async (args: JobActionInput) => {
        // State changes here, not in the validator: validators do not run again when a history is replayed.
        const from = status;
        if (action === 'cancel') {
          cancelRequested = true;
          iterationScope?.cancel();
        } else pending = { action, text: args?.text ?? '', payload: payloadOf(action, args), by: args?.by };
        await settled(from, action);
        return view();
      },
      {
        validator: (args: JobActionInput) => {
          refuseConflict(action, acceptsAction(status, action));
          if (action !== 'cancel') refusePayload(action, payloadOf(action, args));
        },
      }
    );
  }
  setHandler(
    jobDecideUpdate,
    async (args: JobDecisionInput) => {
      const from = status;
      const effect = input.review?.actions.find((a) => a.name === args.action)?.effect ?? 'complete';
      pending = {
        action: args.action,
        text: JSON.stringify(args.payload ?? {}),
        payload: args.payload ?? {},
        by: args.by,
        effect,
      };
      await settled(from, args.action);
      return view();
    },
    {
      validator: (args: JobDecisionInput) => {
        if (!input.review?.actions.some((a) => a.name === args?.action))
          throw ApplicationFailure.create({
            type: JOB_PAYLOAD_INVALID,
            message: `Unknown action: ${String(args?.action)} (this job's review declares ${
              input.review?.actions.map((a) => a.name).join(', ') || 'no actions of its own'
            })`,
            nonRetryable: true,
          });
        refuseConflict(args.action, status === 'awaiting_review');
        refusePayload(args.action, args.payload ?? {});
      },
    }
  );

  /** The one way the job changes state: in the workflow first, then mirrored by the activity. */
  async function move(
    to: JobStatus,
    details: Omit<MirrorInput, 'jobId' | 'transition' | 'streamBase' | 'from' | 'to'> = {}
  ): Promise<void> {
    const from = transition === 0 ? null : status;
    status = to;
    const n = ++transition;
    const written = await CancellationScope.nonCancellable(() =>
      mirrorJobTransition({ jobId, transition: n, streamBase: streamSeq, from, to, ...details })
    );
    streamSeq += written.events;
    mirrored = n;
  }

  await move('queued');
  let next: NextIteration | null = input.rerun
    ? { reason: input.rerun.reason, text: input.rerun.input }
    : { reason: 'goal', text: '' };
  /** The iteration a cancel interrupted, recorded with the cancellation. */
  let interrupted: MirrorInput['iterationDone'];
  /** The decision that starts the next iteration, recorded with it. */
  let pendingDecision: MirrorInput['decision'];
  while (next !== null && !cancelRequested) {
    const n = ++iterations;
    const executionId = `exec-${Date.now()}-${uuid4().replace(/-/g, '').slice(0, 8)}`;
    await move('running', {
      iteration: { n, executionId, reason: next.reason, input: next.text },
      ...(pendingDecision ? { decision: pendingDecision } : {}),
    });
    pendingDecision = undefined;
    const current: NextIteration = next;
    await CancellationScope.nonCancellable(() =>
      prepareIteration({ jobId, n, executionId, reason: current.reason, input: current.text })
    );
    const outcome = await runIteration(executionId);
    const done = { n, executionId, status: outcome.status, text: outcome.text ?? '' };
    if (cancelRequested || outcome.status === 'cancelled') {
      interrupted = done;
      break;
    }
    if (outcome.status === 'failed' && outcome.reason === 'budget_reached') {
      // Paused, not failed: the same iteration runs again once a budget change leaves room (docs/spend.md).
      budgetChanged = false;
      await move('needs_attention', {
        iterationDone: done,
        error: { message: 'A budget covering this job is spent', code: 'budget_reached' },
      });
      await condition(() => budgetChanged || cancelRequested);
      continue;
    }
    if (outcome.status === 'failed') {
      await move('failed', {
        iterationDone: done,
        error: { message: 'The job’s iteration failed', code: 'iteration_failed' },
      });
      return view();
    }
    const request = parseReplyRequest(outcome.text ?? '');
    if (request.kind === 'none') {
      await move('completed', { iterationDone: done });
      return view();
    }
    const deadline = input.review?.timeoutSeconds ? Date.now() + input.review.timeoutSeconds * 1000 : null;
    let timedOut: 'auto_reject' | 'cancel' | null = null;
    if (request.kind === 'review') {
      await move('awaiting_review', { iterationDone: done, reviewRequest: { deadline } });
      timedOut = await awaitReview();
    } else if (patched('question-deadline')) {
      // A question waits under the review's deadline and policy too (histories before it waited without a timer).
      await move('blocked', { iterationDone: done, question: request.question, reviewRequest: { deadline } });
      timedOut = await awaitReview();
    } else {
      await move('blocked', { iterationDone: done, question: request.question });
      await condition(() => pending !== null || cancelRequested);
    }
    if (timedOut === 'cancel') {
      await move('cancelled', { review: 'expired' });
      return view();
    }
    if (timedOut === 'auto_reject') {
      const what = request.kind === 'review' ? 'review' : 'question';
      await move('failed', {
        review: 'rejected',
        decision: { action: 'auto_reject', payload: {}, by: null },
        error: { message: `The ${what}’s deadline passed: rejected (auto_reject)`, code: 'review_rejected' },
      });
      return view();
    }
    if (cancelRequested) break;
    const asked = pending!;
    pending = null;
    const decision = {
      action: asked.auto ? 'auto_approve' : asked.action,
      payload: asked.payload ?? {},
      by: asked.by ?? null,
    };
    if ((asked.action === 'approve' && asked.text === '') || asked.effect === 'complete') {
      await move('completed', { review: 'approved', decision });
      return view();
    }
    next = {
      reason:
        asked.action === 'iterate' || asked.effect === 'iterate'
          ? 'feedback'
          : asked.action === 'resume'
            ? 'input'
            : 'next_step',
      text: asked.effect === 'iterate' ? `${asked.action}: ${asked.text}` : asked.text,
    };
    pendingDecision = decision;
  }
  await move('cancelled', interrupted ? { iterationDone: interrupted } : {});
  return view();

  /**
   * Waits for a decision on the review (or the answer to a question); with a deadline, a durable timer raced with it
   * (a `condition` with a timeout), whose policy fires once: remind and escalate record it and go on waiting; auto_approve decides;
   * auto_reject and cancel are returned for the caller to end the job.
   */
  async function awaitReview(): Promise<'auto_reject' | 'cancel' | null> {
    const spec = input.review;
    if (spec?.timeoutSeconds && spec.onTimeout) {
      const answered = await condition(() => pending !== null || cancelRequested, spec.timeoutSeconds * 1000);
      if (!answered) {
        const policy = spec.onTimeout;
        if (policy === 'auto_reject' || policy === 'cancel') return policy;
        if (policy === 'auto_approve') pending = { action: 'approve', text: '', payload: {}, auto: true };
        else {
          const written = await CancellationScope.nonCancellable(() =>
            mirrorReviewOverdue({
              jobId,
              transition,
              streamBase: streamSeq,
              policy,
              escalateTo: policy === 'escalate' ? spec.escalateTo : null,
            })
          );
          streamSeq += written.events;
        }
      }
    }
    await condition(() => pending !== null || cancelRequested);
    return null;
  }

  /** Runs one iteration as a child execution, cancelled with the job. */
  async function runIteration(executionId: string): Promise<AgentExecutionOutcome> {
    const abandon = async (outcome: 'cancelled' | 'failed'): Promise<AgentExecutionOutcome> => {
      await CancellationScope.nonCancellable(() => finishExecution({ executionId, status: outcome }));
      return { status: outcome };
    };
    if (cancelRequested) return abandon('cancelled');
    iterationScope = new CancellationScope();
    try {
      return await iterationScope.run(() =>
        executeChild<AgentExecutionWorkflow>('agentExecution', {
          ...executionStartOptions({
            executionId,
            organizationId: input.organizationId,
            agentId: input.agentId,
            deadlineSeconds: input.deadlineSeconds,
            memo: { jobId },
            ...(input.concurrency ? { concurrency: true } : {}),
          }),
          parentClosePolicy: ParentClosePolicy.REQUEST_CANCEL,
        })
      );
    } catch (err) {
      return abandon(isCancellation(err) || cancelRequested ? 'cancelled' : 'failed');
    } finally {
      iterationScope = undefined;
    }
  }
}

/** @returns whether a status is terminal (for callers that only have the workflow's view). */
export const isTerminalJobStatus = (s: JobStatus): boolean => TERMINAL_JOB_STATUSES.includes(s);
