/**
 * Activities of the job workflow (workflows/job.ts). Both are idempotent under Temporal's at-least-once execution:
 * the iteration's records have deterministic ids, and a transition's stream events, record update and service
 * events are keyed by the transition's number, so a retried activity writes nothing twice.
 */
import { executionsStarted } from '../lib/metrics';
import { ApplicationFailure } from '@temporalio/common';
import { recordPendingExecution, type RerunSeed } from '../commands/executionStart';
import { AppError } from '../lib/errors';
import { rerunSeedOf } from '../commands/chatForks';
import { holdsSession } from '../commands/conversations';
import { updateOneDirect } from '../lib/driverOps';
import { recordEvent, type EventDeps, type ServiceEventType } from '../commands/serviceEvents';
import type { Config } from '../lib/config';
import { appendEvents, type LoggedEvent } from '../commands/eventLog';
import type { Logger } from '../lib/logger';
import { resolveModel } from '../lib/providers';
import {
  Agent,
  Chat,
  Job,
  jobStreamId,
  Session,
  TERMINAL_JOB_STATUSES,
  type JobDoc,
  type JobIteration,
  type JobStatus,
} from '../models';
import { iterationMessage, type IterationReason } from '../workflows/jobStates';
import { NO_REVIEW_DEADLINE, pendingActions, type ReviewSpec } from '../workflows/reviews';

export interface JobActivityDeps extends EventDeps {
  logger: Logger;
  config: Readonly<Config>;
}

/** Characters of an iteration's reply kept in the job's artifact (the full reply stays on its execution). */
const ARTIFACT_CHARS = 100_000;

export interface IterationStart {
  n: number;
  executionId: string;
  reason: IterationReason;
  input: string;
}

export interface IterationDone {
  n: number;
  executionId: string;
  status: 'completed' | 'failed' | 'cancelled';
  text: string;
}

export interface MirrorInput {
  jobId: string;
  /** The transition's number (1 = created). */
  transition: number;
  /** Seq of the job stream after which this transition's events go. */
  streamBase: number;
  from: JobStatus | null;
  to: JobStatus;
  /** The iteration this transition starts. */
  iteration?: IterationStart;
  /** The iteration that ended just before this transition. */
  iterationDone?: IterationDone;
  /** The agent's question (→ blocked). */
  question?: string;
  /** The review's outcome: approved (approve, a declared `complete` action, auto_approve), rejected
   * (auto_reject), expired (the deadline's cancel). */
  review?: 'approved' | 'rejected' | 'expired';
  /** A review asked for (→ awaiting_review): its deadline (ms since the epoch), if any. */
  reviewRequest?: { deadline: number | null };
  /** The decision that caused this transition: the action, its payload, who (a user id; null: the deadline). */
  decision?: { action: string; payload: Record<string, unknown>; by: string | null };
  error?: { message: string; code: string };
}

export interface OverdueInput {
  jobId: string;
  /** The transition that asked for the review (the key: one overdue per review). */
  transition: number;
  streamBase: number;
  policy: 'remind' | 'escalate';
  escalateTo: string | null;
}

/**
 * @param job the job.
 * @returns the job's summary in service events and stream events.
 */
function jobRef(job: JobDoc): Record<string, unknown> {
  return {
    job_id: job._id,
    title: job.title,
    agent_id: job.agentId,
    mission_id: job.missionId ?? null,
    task_id: job.taskId ?? null,
  };
}

/** @returns the job's review declaration (stored as JSON: schemas may hold `$` keys), or null. */
function readReviewSpec(job: JobDoc): ReviewSpec | null {
  return job.reviewSpec ? (JSON.parse(job.reviewSpec) as ReviewSpec) : null;
}

const presentAction = (a: ReturnType<typeof pendingActions>[number]) => ({
  name: a.name,
  schema: a.schema,
  ...(a.effect ? { effect: a.effect } : {}),
  ...(a.description ? { description: a.description } : {}),
});

/**
 * What a rerun job's chosen iteration starts with: the original execution's steps before the chosen one
 * (commands/jobReruns.ts). The rerun request read them; a stream that expired since fails the iteration.
 */
async function rerunSeed(rerunOf: { executionId: string; step: number }): Promise<RerunSeed> {
  try {
    return await rerunSeedOf(rerunOf.executionId, rerunOf.step);
  } catch (err) {
    if (err instanceof AppError && err.status < 500)
      throw ApplicationFailure.nonRetryable(err.message, 'RerunStepGone');
    throw err;
  }
}

/**
 * @param deps logger and configuration.
 * @returns the job activities.
 */
export function createJobActivities(deps: JobActivityDeps) {
  const log = deps.logger.child({ component: 'jobs' });

  /**
   * Writes iteration `n`'s execution (pending, in the job's session, linked to the job and to the previous
   * iteration in the execution tree) and takes the job's session for it. The job's session is used by its
   * iterations only, one after the other, so taking it is a plain write.
   */
  async function prepareIteration(input: IterationStart & { jobId: string }): Promise<void> {
    const job = await Job.findById(input.jobId).lean<JobDoc>();
    if (!job) throw ApplicationFailure.nonRetryable(`Job ${input.jobId} not found`, 'JobMissing');
    const [agent, chat] = await Promise.all([
      Agent.findById(job.agentId).select({ model: 1 }).lean(),
      Chat.findById(job.chatId).select({ model: 1, turns: 1, activeExecutionId: 1, chatStreamSeq: 1 }).lean(),
    ]);
    // The session's state is on the job's chat (commands/conversations.ts), or, for a job recorded before, in its
    // `sessions` document.
    const onChat = chat !== null && holdsSession(chat);
    const session = onChat ? chat : await Session.findById(job.sessionId).lean();
    if (!session) throw ApplicationFailure.nonRetryable(`Session ${job.sessionId} not found`, 'SessionMissing');
    const previous = job.iterations.find((i) => i.n === input.n - 1)?.executionId ?? null;
    const first = job.iterations.find((i) => i.n === 1)?.executionId ?? input.executionId;
    const resolved = resolveModel(chat?.model ?? agent?.model, deps.config);
    // A rerun job's chosen iteration starts with the original's steps before the chosen one (commands/jobReruns.ts).
    const rerun = job.rerunOf?.iteration === input.n ? await rerunSeed(job.rerunOf) : undefined;
    if (session.activeExecutionId !== input.executionId)
      await updateOneDirect(
        onChat ? Chat : Session,
        { _id: session._id },
        {
          $set: { activeExecutionId: input.executionId, turns: input.n },
        }
      );
    await recordPendingExecution({
      _id: input.executionId,
      organizationId: job.organizationId,
      agentId: job.agentId,
      userId: job.userId,
      chatId: job.chatId,
      sessionId: job.sessionId,
      spaceId: job.spaceId,
      turn: input.n,
      message: iterationMessage(input.reason, job.goal, input.input),
      provider: resolved.provider,
      model: resolved.model,
      modelNote: resolved.note ?? null,
      parentExecutionId: previous,
      rootExecutionId: first,
      taskId: job.taskId ?? null,
      source: 'job',
      jobId: job._id,
      ...(job.missionId ? { missionId: job.missionId } : {}),
      chatSeqBase: session.chatStreamSeq ?? 0,
      ...(onChat ? { sessionOnChat: true } : {}),
      ...(rerun ? { rerun } : {}),
      // The job's concurrency key (start-work `concurrency_key`): the iteration waits for it like any execution.
      ...(job.concurrency?.length
        ? { concurrency: job.concurrency.map((c) => ({ key: c.key!, limit: c.limit ?? 1 })) }
        : {}),
    });
    executionsStarted.inc({ source: 'job' });
  }

  /**
   * Mirrors one transition of the workflow: the job stream's events, the record, and the service events.
   * @returns how many stream events the transition wrote (the workflow's next stream base).
   */
  async function mirrorJobTransition(input: MirrorInput): Promise<{ events: number }> {
    const job = await Job.findById(input.jobId).lean<JobDoc>();
    if (!job) throw ApplicationFailure.nonRetryable(`Job ${input.jobId} not found`, 'JobMissing');
    const now = new Date();
    const ref = jobRef(job);
    const events: Omit<LoggedEvent, 'seq'>[] = [];
    const set: Record<string, unknown> = { status: input.to, transitionSeq: input.transition, question: null };
    const done = input.iterationDone;
    const artifact = done?.text
      ? {
          id: `reply-${done.n}`,
          name: `Iteration ${done.n} reply`,
          kind: 'reply',
          executionId: done.executionId,
          content: done.text.slice(0, ARTIFACT_CHARS),
          updatedAt: now,
        }
      : null;
    if (done) {
      events.push({
        event: 'transcript.output',
        data: {
          job_id: job._id,
          iteration: done.n,
          execution_id: done.executionId,
          status: done.status,
          text: done.text,
        },
      });
      if (artifact)
        events.push({
          event: 'artifact.updated',
          data: {
            job_id: job._id,
            artifact: { id: artifact.id, name: artifact.name, kind: artifact.kind, execution_id: artifact.executionId },
          },
        });
    }
    let review = job.review?.state ?? 'none';
    const spec = readReviewSpec(job);
    const decision = input.decision ? { ...input.decision, at: now } : undefined;
    // What the previous review was (kept with its outcome), and whom it waited for.
    const kept = {
      requestedAt: job.review?.requestedAt ?? null,
      assignee: job.review?.assignee ?? null,
      deadline: job.review?.deadline ?? null,
      onTimeout: job.review?.onTimeout ?? null,
      overdueAt: job.review?.overdueAt ?? null,
      escalatedFrom: job.review?.escalatedFrom ?? null,
      decision: decision ?? job.review?.decision ?? null,
    };
    if (input.to === 'awaiting_review') {
      review = 'pending';
      const deadline = input.reviewRequest?.deadline ? new Date(input.reviewRequest.deadline) : null;
      set.review = {
        state: review,
        requestedAt: now,
        feedback: null,
        assignee: spec?.assignee ?? job.userId,
        deadline,
        onTimeout: deadline ? (spec?.onTimeout ?? null) : null,
        overdueAt: null,
        escalatedFrom: null,
        decision: null,
      };
      set.reviewAssignee = spec?.assignee ?? job.userId;
      set.reviewDueAt = deadline ?? NO_REVIEW_DEADLINE;
    } else if (input.to === 'blocked' && input.reviewRequest?.deadline) {
      // A question under the review's deadline: whom it waits for, until when, and the policy (no review asked).
      const deadline = new Date(input.reviewRequest.deadline);
      set.review = {
        ...kept,
        state: review,
        feedback: job.review?.feedback ?? null,
        assignee: spec?.assignee ?? job.userId,
        deadline,
        onTimeout: spec?.onTimeout ?? null,
        overdueAt: null,
        escalatedFrom: null,
      };
    } else if (input.iteration?.reason === 'feedback') {
      review = 'changes_requested';
      set.review = { ...kept, state: review, feedback: input.iteration.input };
    } else if (input.review === 'approved' || input.iteration?.reason === 'next_step') {
      review = 'approved';
      set.review = { ...kept, state: review, feedback: null };
    } else if (input.review) {
      review = input.review;
      set.review = { ...kept, state: review, feedback: null, decision: kept.decision };
    } else if (decision) set.review = { ...kept, state: review, feedback: job.review?.feedback ?? null };
    if (set.review && input.to !== 'blocked')
      events.push({
        event: 'review.updated',
        data: {
          job_id: job._id,
          review_state: review,
          ...(input.to === 'awaiting_review'
            ? {
                actions: pendingActions(input.to, spec).map(presentAction),
                assignee: (set.review as { assignee: string }).assignee,
                deadline: (set.review as { deadline: Date | null }).deadline?.toISOString() ?? null,
                on_timeout: (set.review as { onTimeout: string | null }).onTimeout,
              }
            : {}),
          ...(decision ? { decision: { action: decision.action, payload: decision.payload, by: decision.by } } : {}),
        },
      });
    if (input.question !== undefined) set.question = input.question;
    if (input.error) set.error = input.error;
    if (input.to === 'running' && !job.startedAt) set.startedAt = now;
    if (input.from === 'needs_attention' && input.to === 'running') set.error = null;
    if (TERMINAL_JOB_STATUSES.includes(input.to)) set.completedAt = now;
    events.push({
      event: 'job.status',
      data: {
        ...ref,
        status: input.to,
        previous_status: input.from,
        iteration: input.iteration?.n ?? done?.n ?? job.iterations.length,
        execution_id: input.iteration?.executionId ?? done?.executionId ?? null,
        review_state: review,
        question: input.question ?? null,
        error: input.error ?? null,
      },
    });
    await appendEvents(
      jobStreamId(job._id),
      events.map((e, i) => ({ ...e, seq: input.streamBase + i + 1 }))
    );
    set.streamSeq = input.streamBase + events.length;

    // The record: one write per transition, skipped when a retried attempt already made it.
    if ((job.transitionSeq ?? 0) < input.transition) {
      const update: Record<string, unknown> = { $set: set };
      const iterations: JobIteration[] = job.iterations.map((i) =>
        done && i.n === done.n ? { ...i, status: done.status, completedAt: now } : i
      );
      if (input.iteration)
        iterations.push({ ...input.iteration, status: 'running', startedAt: now, completedAt: null });
      set.iterations = iterations;
      if (artifact) set.artifacts = [...job.artifacts.filter((a) => a.id !== artifact.id), artifact];
      await Job.updateOne({ _id: job._id }, update);
    }

    // Service events for webhooks, each once per transition.
    const record = (type: ServiceEventType, data: Record<string, unknown>): Promise<unknown> =>
      recordEvent(
        { type, organizationId: job.organizationId, data, key: `job-${job._id}:${input.transition}:${type}` },
        deps
      );
    if (input.from === null) await record('job.created', { ...ref, status: input.to, goal: job.goal });
    else await record('job.status_changed', { ...ref, from: input.from, to: input.to });
    if (input.to === 'awaiting_review') await record('job.review_requested', { ...ref, iteration: done?.n ?? null });
    if (TERMINAL_JOB_STATUSES.includes(input.to))
      await record('job.done', { ...ref, status: input.to, error: input.error ?? null });
    log.info({ jobId: job._id, from: input.from, to: input.to, transition: input.transition }, 'job transition');
    return { events: events.length };
  }

  /**
   * A review's deadline passed with policy remind or escalate: the job stream's `review.overdue` event, the record
   * (when, and the new assignee of an escalation, with the previous one), and the service event
   * `job.review_overdue` (remind) or `job.review_escalated` (escalate), each once per review (keyed by the
   * transition that asked for it).
   * @returns how many stream events it wrote.
   */
  async function mirrorReviewOverdue(input: OverdueInput): Promise<{ events: number }> {
    const job = await Job.findById(input.jobId).lean<JobDoc>();
    if (!job) throw ApplicationFailure.nonRetryable(`Job ${input.jobId} not found`, 'JobMissing');
    const now = new Date();
    const from = job.review?.assignee ?? job.userId;
    const already = job.review?.overdueAt != null && (job.transitionSeq ?? 0) === input.transition;
    const overdueAt = already ? job.review!.overdueAt! : now;
    const assignee = input.policy === 'escalate' && input.escalateTo ? input.escalateTo : from;
    const escalatedFrom = already ? (job.review?.escalatedFrom ?? null) : input.policy === 'escalate' ? from : null;
    const data = {
      job_id: job._id,
      policy: input.policy,
      deadline: job.review?.deadline?.toISOString() ?? null,
      overdue_at: overdueAt.toISOString(),
      assignee: already ? (job.review?.assignee ?? null) : assignee,
      escalated_from: escalatedFrom,
    };
    await appendEvents(jobStreamId(job._id), [{ event: 'review.overdue', data, seq: input.streamBase + 1 }]);
    if (!already)
      await Job.updateOne(
        { _id: job._id, transitionSeq: input.transition },
        {
          $set: {
            streamSeq: input.streamBase + 1,
            'review.overdueAt': overdueAt,
            'review.assignee': assignee,
            'review.escalatedFrom': escalatedFrom,
            reviewAssignee: assignee,
          },
        }
      );
    const type: ServiceEventType = input.policy === 'escalate' ? 'job.review_escalated' : 'job.review_overdue';
    await recordEvent(
      {
        type,
        organizationId: job.organizationId,
        data: { ...jobRef(job), ...data },
        key: `job-${job._id}:${input.transition}:${type}`,
      },
      deps
    );
    log.info({ jobId: job._id, policy: input.policy }, 'job review overdue');
    return { events: 1 };
  }

  return { prepareIteration, mirrorJobTransition, mirrorReviewOverdue };
}

export type JobActivities = ReturnType<typeof createJobActivities>;
