/**
 * Typed reviews of jobs (issue 40; docs/decisions.md "Typed reviews, deadlines and escalation (issue 40)"): a job's
 * review declaration read from a request (its schemas compiled once here, so that the workflow's validators never
 * meet a bad one), the declared actions (update `decide` of the job's workflow), and the review inbox.
 */
import mongoose from 'mongoose';
import { StateConflictError, ValidationError } from '../lib/errors';
import { Job, type JobDoc } from '../models';
import { jobDecideUpdate } from '../workflows/definitions';
import { jobWorkflowId } from '../workflows/ids';
import type { job as jobWorkflow } from '../workflows/job';
import {
  BUILTIN_REVIEW_ACTIONS,
  MAX_REVIEW_TIMEOUT_SECONDS,
  NO_REVIEW_DEADLINE,
  parseReviewTimeout,
  type ReviewActionEffect,
  type ReviewSpec,
  type ReviewTimeoutPolicy,
} from '../workflows/reviews';
import { schemaProblem } from '../workflows/reviewValidation';
import type { ExecutionDeps } from './executionStart';
import { findJob, JOB_ACTION_TIMEOUT_MS, refusal } from './jobs';
import type { AuthContext } from './tokens';

/** A review declaration as the current surface takes it (POST /api/jobs `review`). */
export interface ReviewRequest {
  actions?: { name: string; schema?: Record<string, unknown>; effect?: ReviewActionEffect; description?: string }[];
  assignee?: string;
  timeout?: number | string;
  on_timeout?: ReviewTimeoutPolicy;
  escalate_to?: string;
}

/** Largest declaration (its JSON), so that a job's workflow input and record stay small. */
const MAX_REVIEW_JSON = 32_000;

/**
 * @param req the request's declaration.
 * @returns the normalized declaration.
 * @throws ValidationError (400) for a name taken by a built-in action or declared twice, a schema ajv refuses, a
 *   timeout that is neither seconds nor an ISO 8601 duration, a policy without a timeout, escalate without
 *   `escalate_to`.
 */
export function reviewSpecOf(req: ReviewRequest): ReviewSpec {
  const seen = new Set<string>();
  const actions = (req.actions ?? []).map((a) => {
    if ((BUILTIN_REVIEW_ACTIONS as readonly string[]).includes(a.name) || a.name === 'cancel')
      throw new ValidationError(`Invalid review.actions: ${a.name} is a built-in action`);
    if (seen.has(a.name)) throw new ValidationError(`Invalid review.actions: ${a.name} is declared twice`);
    seen.add(a.name);
    const schema = a.schema ?? { type: 'object', additionalProperties: false };
    const problem = schemaProblem(schema);
    if (problem) throw new ValidationError(`Invalid review.actions.${a.name}.schema: ${problem}`);
    return {
      name: a.name,
      schema,
      effect: a.effect ?? 'complete',
      ...(a.description ? { description: a.description } : {}),
    };
  });
  let timeoutSeconds: number | null = null;
  if (req.timeout !== undefined) {
    timeoutSeconds = parseReviewTimeout(req.timeout);
    if (timeoutSeconds === null || timeoutSeconds > MAX_REVIEW_TIMEOUT_SECONDS)
      throw new ValidationError(
        'Invalid review.timeout: whole seconds or an ISO 8601 duration (PT2S, PT1H, P1D), at most 30 days'
      );
  }
  if (req.on_timeout && timeoutSeconds === null)
    throw new ValidationError('Invalid review.on_timeout: the review has no timeout');
  const onTimeout = timeoutSeconds === null ? null : (req.on_timeout ?? 'remind');
  if (onTimeout === 'escalate' && !req.escalate_to)
    throw new ValidationError('Missing required field: review.escalate_to (on_timeout escalate)');
  if (req.escalate_to && onTimeout !== 'escalate')
    throw new ValidationError('Invalid review.escalate_to: only with on_timeout escalate');
  const spec: ReviewSpec = {
    actions,
    assignee: req.assignee ?? null,
    timeoutSeconds,
    onTimeout,
    escalateTo: req.escalate_to ?? null,
  };
  if (JSON.stringify(spec).length > MAX_REVIEW_JSON)
    throw new ValidationError(`Invalid review: at most ${MAX_REVIEW_JSON} characters of JSON`);
  return spec;
}

/**
 * Takes one of the job's declared review actions (workflows/reviews.ts): its payload is validated against the
 * action's schema in the update's validator (400 before anything changes).
 * @param deps Temporal.
 * @param auth the caller (recorded as who decided).
 * @param id job id.
 * @param action a declared action's name.
 * @param payload its payload.
 * @returns the job after the decision.
 */
export async function decideJob(
  deps: Pick<ExecutionDeps, 'temporal'>,
  auth: AuthContext,
  id: string,
  action: string,
  payload: Record<string, unknown>
): Promise<JobDoc> {
  const job = await findJob(auth, id);
  const conflict = (state: string): StateConflictError =>
    new StateConflictError(`Cannot ${action} a job that is ${state}`, state);
  if (job.status !== 'awaiting_review') throw conflict(job.status);
  const handle = deps.temporal.client.workflow.getHandle<typeof jobWorkflow>(jobWorkflowId(id));
  try {
    await deps.temporal.client.withDeadline(Date.now() + JOB_ACTION_TIMEOUT_MS, () =>
      handle.executeUpdate(jobDecideUpdate, { args: [{ action, payload, by: auth.userId }] })
    );
  } catch (err) {
    throw await refusal(err, auth, id, conflict, job.status);
  }
  return findJob(auth, id);
}

/**
 * The review inbox: the organization's jobs awaiting review, oldest deadline first (no deadline last), then by id.
 * @param auth the caller.
 * @param filters whom the reviews wait for (a user id), when given.
 * @param page limit and cursor (`<deadline ms>:<job id>` of the previous page's last job, opaque).
 * @returns the page and the next page's cursor.
 */
export async function listInbox(
  auth: AuthContext,
  filters: { assignee?: string },
  page: { limit: number; cursor?: string }
): Promise<{ items: JobDoc[]; nextCursor: string | null }> {
  const filter: Record<string, unknown> = { organizationId: auth.organizationId };
  if (filters.assignee) filter.reviewAssignee = filters.assignee;
  filter.status = 'awaiting_review';
  // As lib/pagination.ts: the filter's equalities stay at the top level (pushed down), the position in `$and`.
  if (page.cursor) {
    const m = /^(\d{1,16})_(job_[A-Za-z0-9_-]{1,100})$/.exec(Buffer.from(page.cursor, 'base64url').toString('utf8'));
    if (!m) throw new ValidationError('Invalid cursor');
    const due = new Date(Number(m[1]));
    filter.$and = [
      {
        $or: [
          { reviewDueAt: mongoose.trusted({ $gt: due }) },
          { reviewDueAt: due, _id: mongoose.trusted({ $gt: m[2] }) },
        ],
      },
    ];
  }
  const docs = await Job.find(filter)
    .sort({ reviewDueAt: 1, _id: 1 })
    .limit(page.limit + 1)
    .lean<JobDoc[]>();
  const more = docs.length > page.limit;
  const items = more ? docs.slice(0, page.limit) : docs;
  const last = items.at(-1);
  const key = (j: JobDoc): string => `${(j.reviewDueAt ?? NO_REVIEW_DEADLINE).getTime()}_${j._id}`;
  return { items, nextCursor: more && last ? Buffer.from(key(last)).toString('base64url') : null };
}
