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
  proxyActivities,
  setHandler,
  uuid4,
} from '@temporalio/workflow';
import type { ExecutionActivities } from '../activities/executions';
import type { JobActivities, MirrorInput } from '../activities/jobs';
import type { AgentExecutionOutcome, AgentExecutionWorkflow } from './definitions';
import {
  budgetChangedSignal,
  JOB_STATE_CONFLICT,
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

export interface JobInput {
  jobId: string;
  organizationId: string;
  agentId: string;
  /** Deadline of each iteration's reply (EXECUTION_DEADLINE_SECONDS). */
  deadlineSeconds: number;
}

const { mirrorJobTransition, prepareIteration } = proxyActivities<JobActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '500 milliseconds', maximumAttempts: 20 },
});
/** Ends an iteration whose execution never ran (cancelled before its child started); a no-op once it finished. */
const { finishExecution } = proxyActivities<ExecutionActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '500 milliseconds', maximumAttempts: 20 },
});

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
  let iterations = 0;
  let pending: { action: JobAction; text: string } | null = null;
  let cancelRequested = false;
  let iterationScope: CancellationScope | undefined;
  // A spent budget paused the job (needs_attention); the budget's change signals (commands/budgets.ts).
  let budgetChanged = false;
  setHandler(budgetChangedSignal, () => void (budgetChanged = true));
  const view = (): JobView => ({ id: jobId, status, transition: mirrored, iterations });

  setHandler(jobStatusQuery, view);
  for (const action of JOB_ACTIONS) {
    setHandler(
      jobUpdates[action],
      async (args: JobActionInput) => {
        // State changes here, not in the validator: validators do not run again when a history is replayed.
        const from = status;
        if (action === 'cancel') {
          cancelRequested = true;
          iterationScope?.cancel();
        } else pending = { action, text: args?.text ?? '' };
        await condition(
          () => status !== from && mirrored === transition && (action !== 'cancel' || status === 'cancelled')
        );
        return view();
      },
      {
        validator: (_args: JobActionInput) => {
          if (!acceptsAction(status, action) || pending !== null || cancelRequested)
            throw ApplicationFailure.create({
              type: JOB_STATE_CONFLICT,
              message: `Cannot ${action} a job that is ${status}`,
              details: [status],
              nonRetryable: true,
            });
        },
      }
    );
  }

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
  let next: NextIteration | null = { reason: 'goal', text: '' };
  /** The iteration a cancel interrupted, recorded with the cancellation. */
  let interrupted: MirrorInput['iterationDone'];
  while (next !== null && !cancelRequested) {
    const n = ++iterations;
    const executionId = `exec-${Date.now()}-${uuid4().replace(/-/g, '').slice(0, 8)}`;
    await move('running', { iteration: { n, executionId, reason: next.reason, input: next.text } });
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
    if (request.kind === 'review') await move('awaiting_review', { iterationDone: done });
    else await move('blocked', { iterationDone: done, question: request.question });
    await condition(() => pending !== null || cancelRequested);
    if (cancelRequested) break;
    const asked = pending!;
    pending = null;
    if (asked.action === 'approve' && asked.text === '') {
      await move('completed', { review: 'approved' });
      return view();
    }
    next = {
      reason: asked.action === 'iterate' ? 'feedback' : asked.action === 'resume' ? 'input' : 'next_step',
      text: asked.text,
    };
  }
  await move('cancelled', interrupted ? { iterationDone: interrupted } : {});
  return view();

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
