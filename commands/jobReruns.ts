/**
 * Job reruns [docs/decisions.md "Job reruns"; docs/reruns.md]. A job's steps are its iterations and, within each,
 * the steps of the iteration's execution (commands/executionSteps.ts). A rerun from one of them is a NEW job (the
 * original untouched): its record takes over the iterations before the chosen one as they were recorded (their
 * executions, replies and artifacts: nothing of theirs runs again), its chat is a fork of the original job's chat
 * just before the chosen iteration's turn (commands/chatForks.ts `forkConversation`), and its workflow starts at
 * the chosen iteration, whose execution is seeded with the original's steps before the chosen one, as an execution
 * rerun is (its tools are not called again, its model turns not billed again). From there on it is a job like any
 * other: reviews, input, iterations.
 */
import { AppError, NotFoundError, ValidationError } from '../lib/errors';
import { newId } from '../lib/ids';
import { insertDocument } from '../lib/mongo';
import { Chat, Execution, Job, type ChatDoc, type ExecutionDoc, type JobDoc } from '../models';
import type { JobInput } from '../workflows/job';
import { forkConversation, stepsOf } from './chatForks';
import type { ExecutionDeps } from './executionStart';
import type { ExecutionStep } from './executionSteps';
import { findJob, startJobWorkflow } from './jobs';
import type { AuthContext } from './tokens';

/** Most reruns of a job its lineage lists (newest first). */
export const MAX_LISTED_RERUNS = 100;

/** One iteration of a job and its execution's steps (null while it runs, or once its stream expired). */
export interface JobIterationSteps {
  n: number;
  executionId: string;
  reason: string;
  status: string;
  steps: ExecutionStep[] | null;
  /** Why `steps` is null: `running` or `expired`. */
  unavailable?: 'running' | 'expired';
}

/** A job rerun's origin, as the new job records it. */
export interface JobRerunOf {
  jobId: string;
  iteration: number;
  step: number;
  executionId: string;
}

/** @returns the execution of a job's iteration, found for the job's organization. */
async function iterationExecution(job: JobDoc, executionId: string): Promise<ExecutionDoc> {
  const exec = await Execution.findOne({ _id: executionId, organizationId: job.organizationId }).lean<ExecutionDoc>();
  if (!exec) throw new NotFoundError('The iteration’s execution no longer exists');
  return exec;
}

/**
 * @param auth the caller.
 * @param jobId a job of the caller's organization.
 * @returns the job and its iterations in order, each with its execution's steps.
 */
export async function jobSteps(
  auth: AuthContext,
  jobId: string
): Promise<{ job: JobDoc; iterations: JobIterationSteps[] }> {
  const job = await findJob(auth, jobId);
  const iterations: JobIterationSteps[] = [];
  for (const it of [...job.iterations].sort((a, b) => a.n - b.n)) {
    const row: JobIterationSteps = {
      n: it.n,
      executionId: it.executionId,
      reason: it.reason,
      status: it.status,
      steps: null,
    };
    try {
      row.steps = (await stepsOf(await iterationExecution(job, it.executionId))).map((c) => c.step);
    } catch (err) {
      if (!(err instanceof AppError) || err.status >= 500) throw err;
      row.unavailable = err.status === 410 ? 'expired' : 'running';
    }
    iterations.push(row);
  }
  return { job, iterations };
}

/**
 * Reruns a job from one step of one of its iterations, as a new job.
 * @param deps configuration and Temporal.
 * @param auth the caller (the new job's creator).
 * @param jobId the job rerun (any state: the chosen iteration must have ended).
 * @param input the iteration and the step of its execution ({@link jobSteps}), and a changed input for that
 *   iteration: its feedback, input or next step (the goal, for the first iteration).
 * @returns the new job (queued).
 * @throws ValidationError for an iteration or step the job does not have; ConflictError while the iteration runs;
 *   GoneError once its stream expired.
 */
export async function rerunJob(
  deps: ExecutionDeps,
  auth: AuthContext,
  jobId: string,
  input: { iteration: number; step: number; input?: string }
): Promise<JobDoc> {
  const original = await findJob(auth, jobId);
  const iterations = [...original.iterations].sort((a, b) => a.n - b.n);
  const chosen = iterations.find((i) => i.n === input.iteration);
  if (!chosen) throw new ValidationError(`Invalid iteration: this job has ${iterations.length} iteration(s)`);
  const exec = await iterationExecution(original, chosen.executionId);
  const cuts = await stepsOf(exec);
  if (!cuts[input.step - 1])
    throw new ValidationError(`Invalid step: iteration ${chosen.n} has ${cuts.length} step(s)`);
  const source = await Chat.findOne({ _id: original.chatId, organizationId: auth.organizationId }).lean<ChatDoc>();
  if (!source) throw new NotFoundError('The job’s chat no longer exists');
  // The conversation of the iterations before the chosen one (their turns), the original's messages copied.
  const chat = await forkConversation(auth, source, exec.turn * 2 - 1, {
    chatId: source._id,
    messageId: `${exec._id}:user`,
    executionId: exec._id,
  });
  const earlier = iterations.filter((i) => i.n < chosen.n);
  const kept = new Set(earlier.map((i) => i.executionId));
  const rerunOf: JobRerunOf = { jobId: original._id, iteration: chosen.n, step: input.step, executionId: exec._id };
  const changedGoal = chosen.reason === 'goal' && input.input !== undefined;
  const job = (await insertDocument(Job, {
    _id: newId('job'),
    organizationId: auth.organizationId,
    userId: auth.userId,
    agentId: original.agentId,
    spaceId: original.spaceId,
    chatId: chat._id,
    sessionId: chat.sessionId,
    title: original.title,
    goal: changedGoal ? input.input : original.goal,
    parentJobId: original.parentJobId ?? null,
    metadata: original.metadata ?? {},
    reviewSpec: original.reviewSpec ?? null,
    // Taken over as recorded: the same executions, ended as they ended.
    iterations: earlier.map((i) => ({ ...i })),
    artifacts: original.artifacts.filter((a) => a.executionId !== null && kept.has(a.executionId)),
    rerunOf,
    rerunOfJobId: original._id,
  })) as JobDoc;
  const start: NonNullable<JobInput['rerun']> = {
    iteration: chosen.n,
    reason: chosen.reason,
    input: chosen.reason === 'goal' ? '' : (input.input ?? chosen.input),
  };
  await startJobWorkflow(deps, auth, job, start);
  return job;
}

/**
 * @param auth the caller.
 * @param job a job of the caller's organization.
 * @returns its reruns, newest first (up to {@link MAX_LISTED_RERUNS}).
 */
export async function jobReruns(auth: AuthContext, job: JobDoc): Promise<JobDoc[]> {
  return Job.find({ organizationId: auth.organizationId, rerunOfJobId: job._id })
    .sort({ createdAt: -1, _id: -1 })
    .limit(MAX_LISTED_RERUNS)
    .lean<JobDoc[]>();
}
