/**
 * Jobs [docs/decisions.md "Jobs"]: long-running work by an agent toward a goal in a workspace, run by workflow
 * `job-<id>` (workflows/job.ts), which is the source of truth; its activities mirror the state into the Job record,
 * which every read here uses. Plain functions (auth context in, records out) for the HTTP routes and, later, MCP.
 */
import { TypedSearchAttributes } from '@temporalio/common';
import { WorkflowNotFoundError, WorkflowUpdateFailedError, WorkflowUpdateStage } from '@temporalio/client';
import { AppError, NotFoundError, ServiceUnavailableError, StateConflictError, ValidationError } from '../lib/errors';
import { newId } from '../lib/ids';
import { readEvents, type LoggedEvent } from './eventLog';
import { paginate } from '../lib/pagination';
import { Job, TERMINAL_JOB_STATUSES, type JobDoc, type JobStatus } from '../models';
import { workPriority } from '../workflows/executionStart';
import { jobWorkflowId } from '../workflows/ids';
import { JOB_PAYLOAD_INVALID, JOB_STATE_CONFLICT, jobUpdates } from '../workflows/definitions';
import type { job as jobWorkflow, JobInput } from '../workflows/job';
import { acceptsAction, type JobAction } from '../workflows/jobStates';
import type { ReviewSpec } from '../workflows/reviews';
import { agentIdKey, organizationIdKey, workKindKey } from '../workflows/searchAttributes';
import { createChat } from './chats';
import type { ExecutionDeps } from './executionStart';
import { abortReply } from './executions';
import type { AuthContext } from './tokens';
import { fairnessWeight } from './fairShare';
import { isDuplicateKey } from '../lib/mongo';

const NOT_FOUND = 'Job not found';
/**
 * How long an action waits for the workflow to take it and mirror the resulting state (a worker must pick it up;
 * cancelling waits for the running iteration to stop, normally well under a second).
 */
export const JOB_ACTION_TIMEOUT_MS = 15_000;

export interface JobCreateInput {
  agentId: string;
  /** Default: the caller's active workspace. */
  workspaceId?: string;
  title?: string;
  goal: string;
  parentJobId?: string;
  missionId?: string;
  missionRunId?: string;
  taskId?: string;
  metadata?: Record<string, unknown>;
  /** What its reviews wait for, and their deadline (commands/jobReviews.ts `reviewSpecOf`). */
  review?: ReviewSpec;
  /** A caller's concurrency key each iteration holds before it runs, and its limit (default 1). */
  concurrencyKey?: string;
  concurrencyLimit?: number;
}

/**
 * Writes a queued job with its own chat and session (in the workspace, with the agent), without starting it.
 * The id is deterministic when `jobId` is given (a mission run's retried activity creates one job).
 * @param auth the caller (or the mission's creator, for a mission run).
 * @param input agent, workspace, goal and links.
 * @param jobId the job's id, when the caller fixes it.
 * @returns the job.
 */
export async function createJobRecord(auth: AuthContext, input: JobCreateInput, jobId = newId('job')): Promise<JobDoc> {
  const existing = await Job.findOne({ _id: jobId, organizationId: auth.organizationId }).lean<JobDoc>();
  if (existing) return existing;
  if (input.parentJobId) await findJob(auth, input.parentJobId).catch(invalid('parent_job_id'));
  const title = input.title ?? input.goal.slice(0, 200);
  const chat = await createChat(auth, { agentId: input.agentId, workspaceId: input.workspaceId, title });
  const job = await Job.create({
    _id: jobId,
    organizationId: auth.organizationId,
    userId: auth.userId,
    agentId: chat.agentId,
    spaceId: chat.spaceId,
    chatId: chat._id,
    sessionId: chat.sessionId,
    title,
    goal: input.goal,
    parentJobId: input.parentJobId ?? null,
    missionId: input.missionId ?? null,
    missionRunId: input.missionRunId ?? null,
    taskId: input.taskId ?? null,
    metadata: input.metadata ?? {},
    reviewSpec: input.review ? JSON.stringify(input.review) : null,
    ...(input.concurrencyKey
      ? { concurrency: [{ key: `key:${input.concurrencyKey}`, limit: input.concurrencyLimit ?? 1 }] }
      : {}),
  }).catch(async (err: unknown) => {
    if (!isDuplicateKey(err)) throw err;
    return Job.findById(jobId); // created by a concurrent attempt
  });
  return job!.toObject() as JobDoc;
}

const invalid = (field: string) => (err: unknown) => {
  throw err instanceof NotFoundError ? new ValidationError(`Invalid ${field}: job not found`) : err;
};

/**
 * The start options of a job's workflow (the api starts it; a mission run starts it as a child).
 * @param job the job.
 * @param deadlineSeconds each iteration's deadline.
 * @returns workflow id, input, search attributes and memo.
 */
export function jobWorkflowStart(job: JobDoc, deadlineSeconds: number, rerun?: JobInput['rerun']) {
  const args: [JobInput] = [
    {
      jobId: job._id,
      organizationId: job.organizationId,
      agentId: job.agentId,
      deadlineSeconds,
      ...(job.reviewSpec ? { review: JSON.parse(job.reviewSpec) as ReviewSpec } : {}),
      ...(rerun ? { rerun } : {}),
      ...(job.concurrency?.length ? { concurrency: true } : {}),
    },
  ];
  return {
    workflowId: jobWorkflowId(job._id),
    args,
    searchAttributes: [
      { key: organizationIdKey, value: job.organizationId },
      { key: agentIdKey, value: job.agentId },
      { key: workKindKey, value: 'job' },
    ],
    // Ids only: no user text (docs/decisions.md "Observability: private payloads").
    memo: {
      agentId: job.agentId,
      workspaceId: job.spaceId,
      chatId: job.chatId,
      missionId: job.missionId ?? null,
      taskId: job.taskId ?? null,
    },
  };
}

/**
 * Creates a job and starts its workflow.
 * @param deps configuration and Temporal.
 * @param auth the caller.
 * @param input agent, workspace, goal and links.
 * @returns the job (queued).
 */
export async function createJob(deps: ExecutionDeps, auth: AuthContext, input: JobCreateInput): Promise<JobDoc> {
  const job = await createJobRecord(auth, input);
  await startJobWorkflow(deps, auth, job);
  return job;
}

/**
 * Starts a written job's workflow; a job whose start failed is marked failed (`start_failed`).
 * @param deps configuration and Temporal.
 * @param auth the caller.
 * @param job the queued job.
 * @param rerun a rerun's start (commands/jobReruns.ts).
 */
export async function startJobWorkflow(
  deps: ExecutionDeps,
  auth: AuthContext,
  job: JobDoc,
  rerun?: JobInput['rerun']
): Promise<void> {
  const start = jobWorkflowStart(job, deps.config.executionDeadlineSeconds, rerun);
  try {
    await deps.temporal.client.workflow.start<typeof jobWorkflow>('job', {
      workflowId: start.workflowId,
      taskQueue: deps.temporal.taskQueue,
      args: start.args,
      typedSearchAttributes: new TypedSearchAttributes(start.searchAttributes),
      memo: start.memo,
      priority: workPriority('job', job.organizationId, await fairnessWeight(job.organizationId)),
    });
  } catch (err) {
    await Job.updateOne(
      { _id: job._id, organizationId: auth.organizationId, status: 'queued' },
      {
        $set: {
          status: 'failed',
          error: { message: 'Could not start the job', code: 'start_failed' },
          completedAt: new Date(),
        },
      }
    );
    throw err instanceof AppError ? err : new ServiceUnavailableError();
  }
}

/**
 * @param auth the caller.
 * @param id job id.
 * @returns the job of the caller's organization.
 */
export async function findJob(auth: AuthContext, id: string): Promise<JobDoc> {
  const job = await Job.findOne({ _id: id, organizationId: auth.organizationId }).lean<JobDoc>();
  if (!job) throw new NotFoundError(NOT_FOUND);
  return job;
}

export interface JobFilters {
  status?: JobStatus;
  missionId?: string;
  agentId?: string;
  chatId?: string;
}

/**
 * @param auth the caller.
 * @param filters status, mission, agent, chat (the first one given is the indexed equality; others are checked
 *   on the rows it selects).
 * @param page limit and cursor.
 * @returns the organization's jobs, newest first.
 */
export async function listJobs(
  auth: AuthContext,
  filters: JobFilters,
  page: { limit: number; cursor?: string }
): Promise<{ items: JobDoc[]; nextCursor: string | null }> {
  const filter: Record<string, unknown> = { organizationId: auth.organizationId };
  if (filters.status) filter.status = filters.status;
  if (filters.missionId) filter.missionId = filters.missionId;
  if (filters.agentId) filter.agentId = filters.agentId;
  if (filters.chatId) filter.chatId = filters.chatId;
  return paginate<JobDoc>(Job, filter, page);
}

/**
 * Sends an action to the job's workflow (a Temporal update) and waits for the resulting state to be mirrored.
 * @param deps Temporal.
 * @param auth the caller.
 * @param id job id.
 * @param action approve, iterate, resume or cancel.
 * @param text feedback (iterate), input (resume) or next step (approve).
 * @returns the job after the action.
 * @throws StateConflictError (409 with `current_state`) when the action does not fit the job's state.
 */
export async function actOnJob(
  deps: Pick<ExecutionDeps, 'temporal'>,
  auth: AuthContext,
  id: string,
  action: JobAction,
  text?: string,
  payload?: Record<string, unknown>
): Promise<JobDoc> {
  const job = await findJob(auth, id);
  const conflict = (state: string): StateConflictError =>
    new StateConflictError(`Cannot ${action} a job that is ${state}`, state);
  const status = job.status as JobStatus;
  // A finished job's workflow is closed: answer from the record, which the workflow's last step wrote.
  if (TERMINAL_JOB_STATUSES.includes(status) || (status !== 'queued' && !acceptsAction(status, action)))
    throw conflict(status);
  const handle = deps.temporal.client.workflow.getHandle<typeof jobWorkflow>(jobWorkflowId(id));
  // A cancel also stops the running iteration's reply at once, once the job accepted it (the reply's local activity
  // sees the workflow's cancellation only at the next heartbeat of its workflow task).
  const iteration =
    status === 'running' && action === 'cancel'
      ? job.iterations.reduce<(typeof job.iterations)[number] | undefined>(
          (a, b) => (a && a.n > b.n ? a : b),
          undefined
        )
      : undefined;
  try {
    await deps.temporal.client.withDeadline(Date.now() + JOB_ACTION_TIMEOUT_MS, async () => {
      const update = await handle.startUpdate(jobUpdates[action], {
        args: [{ text, ...(payload ? { payload } : {}), by: auth.userId }],
        waitForStage: WorkflowUpdateStage.ACCEPTED,
      });
      if (iteration) await abortReply(iteration.executionId);
      await update.result();
    });
  } catch (err) {
    throw await refusal(err, auth, id, conflict, job.status);
  }
  return findJob(auth, id);
}

/**
 * @returns the client's error for a refused update: 409 for the job's state (or a decision already taken), 400
 *   for a payload its schema refuses; any other error as it is.
 */
export async function refusal(
  err: unknown,
  auth: AuthContext,
  id: string,
  conflict: (state: string) => StateConflictError,
  status: string
): Promise<unknown> {
  if (err instanceof WorkflowUpdateFailedError) {
    const cause = err.cause as { type?: string; details?: unknown[]; message?: string } | undefined;
    if (cause?.type === JOB_PAYLOAD_INVALID) return new ValidationError(cause.message ?? 'Invalid payload');
    if (cause?.type === JOB_STATE_CONFLICT) {
      const state = String(cause.details?.[0] ?? status);
      return cause.message ? new StateConflictError(cause.message, state) : conflict(state);
    }
  }
  if (err instanceof WorkflowNotFoundError) return conflict((await findJob(auth, id)).status);
  return err;
}

/** Most jobs one decision request names (issue 40 point 3). */
export const MAX_JOB_DECISIONS = 100;
/** Decisions of one request in flight at once (each one update of its job's workflow); the rest wait their turn. */
const DECISIONS_IN_FLIGHT = 8;

/**
 * Takes one decision on many jobs: each job is decided as {@link actOnJob} decides one, independently (one job's
 * refusal, a state conflict or a job not found, never stops the others).
 * @param deps Temporal.
 * @param auth the caller.
 * @param ids the jobs, at most {@link MAX_JOB_DECISIONS}.
 * @param action approve, iterate, resume or cancel.
 * @param text the action's text, as {@link actOnJob} takes it.
 * @returns per job, in the order given: the job after the decision, or why it was not taken.
 */
export async function actOnJobs(
  deps: Pick<ExecutionDeps, 'temporal'>,
  auth: AuthContext,
  ids: readonly string[],
  action: JobAction,
  text?: string,
  payload?: Record<string, unknown>
): Promise<PromiseSettledResult<JobDoc>[]> {
  const results: PromiseSettledResult<JobDoc>[] = new Array<PromiseSettledResult<JobDoc>>(ids.length);
  let next = 0;
  const lane = async (): Promise<void> => {
    while (next < ids.length) {
      const i = next++;
      try {
        results[i] = { status: 'fulfilled', value: await actOnJob(deps, auth, ids[i], action, text, payload) };
      } catch (reason) {
        results[i] = { status: 'rejected', reason };
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(DECISIONS_IN_FLIGHT, ids.length) }, lane));
  return results;
}

/**
 * @param auth the caller.
 * @param id job id.
 * @returns the job, its parent, its children (up to 100, newest first) and its iterations.
 */
export async function jobLineage(
  auth: AuthContext,
  id: string
): Promise<{ job: JobDoc; parent: JobDoc | null; children: JobDoc[] }> {
  const job = await findJob(auth, id);
  const parent = job.parentJobId
    ? await Job.findOne({ _id: job.parentJobId, organizationId: auth.organizationId }).lean<JobDoc>()
    : null;
  const children = await Job.find({ organizationId: auth.organizationId, parentJobId: job._id })
    .sort({ createdAt: -1, _id: -1 })
    .limit(100)
    .lean<JobDoc[]>();
  return { job, parent, children };
}

/** One event of an iteration's transcript. */
export interface TranscriptEvent extends LoggedEvent {
  iteration: number;
  executionId: string;
}

/**
 * The transcripts of the job's iterations in order (each iteration's execution stream), one page at a time.
 * @param auth the caller.
 * @param id job id.
 * @param page limit, and the position after which to start (`<iteration>:<seq>`).
 * @returns the events and the next page's position (null at the end).
 */
export async function jobTranscript(
  auth: AuthContext,
  id: string,
  page: { limit: number; cursor?: string }
): Promise<{ job: JobDoc; events: TranscriptEvent[]; next: string | null }> {
  const job = await findJob(auth, id);
  const m = page.cursor === undefined ? ['', '1', '0'] : /^(\d{1,6}):(\d{1,9})$/.exec(page.cursor);
  if (!m) throw new ValidationError('Invalid cursor');
  let iteration = Number(m[1]);
  let after = Number(m[2]);
  const events: TranscriptEvent[] = [];
  const iterations = [...job.iterations].sort((a, b) => a.n - b.n);
  for (const it of iterations) {
    if (it.n < iteration) continue;
    if (it.n > iteration) after = 0;
    iteration = it.n;
    const want = page.limit + 1 - events.length;
    for (const e of await readEvents(it.executionId, after, want))
      events.push({ ...e, iteration: it.n, executionId: it.executionId });
    if (events.length > page.limit) break;
  }
  const more = events.length > page.limit;
  const items = more ? events.slice(0, page.limit) : events;
  const last = items.at(-1);
  return { job, events: items, next: more && last ? `${last.iteration}:${last.seq}` : null };
}
