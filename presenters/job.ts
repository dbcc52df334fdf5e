/** Job → the current surface's JSON (snake_case), and its lineage. */
import { pendingActions, type JobDoc, type ReviewSpec } from '../models';
import { iso } from './time';

/**
 * @param job the stored job.
 * @returns its short form (lineage, lists of related jobs).
 */
export function presentJobRef(job: JobDoc): Record<string, unknown> {
  return { id: job._id, title: job.title, status: job.status, created_at: iso(job.createdAt) };
}

/**
 * @param job the stored job.
 * @returns a rerun's origin (POST /api/jobs/{id}/rerun), or null.
 */
export function presentRerunOf(job: JobDoc): Record<string, unknown> | null {
  const r = job.rerunOf;
  return r ? { job_id: r.jobId, iteration: r.iteration, step: r.step, execution_id: r.executionId } : null;
}

/**
 * @param job the stored job.
 * @returns the public record.
 */
export function presentJob(job: JobDoc): Record<string, unknown> {
  return {
    id: job._id,
    organization_id: job.organizationId,
    title: job.title,
    goal: job.goal,
    status: job.status,
    agent_id: job.agentId,
    workspace_id: job.spaceId,
    created_by: job.userId,
    review: presentReview(job),
    question: job.question ?? null,
    iterations: job.iterations.map((i) => ({
      n: i.n,
      execution_id: i.executionId,
      reason: i.reason,
      input: i.input,
      status: i.status,
      started_at: iso(i.startedAt),
      completed_at: iso(i.completedAt),
    })),
    artifacts: job.artifacts.map((a) => ({
      id: a.id,
      name: a.name,
      kind: a.kind,
      execution_id: a.executionId ?? null,
      content: a.content,
      updated_at: iso(a.updatedAt),
    })),
    error: job.error?.message ? { message: job.error.message, code: job.error.code ?? 'failed' } : null,
    metadata: job.metadata ?? {},
    rerun_of: presentRerunOf(job),
    links: {
      chat_id: job.chatId,
      mission_id: job.missionId ?? null,
      mission_run_id: job.missionRunId ?? null,
      task_id: job.taskId ?? null,
      parent_job_id: job.parentJobId ?? null,
      execution_ids: job.iterations.map((i) => i.executionId),
    },
    created_at: iso(job.createdAt),
    updated_at: iso(job.updatedAt),
    started_at: iso(job.startedAt),
    completed_at: iso(job.completedAt),
  };
}

/**
 * @param job the stored job.
 * @returns its review: state, and while it waits for a person, the actions it takes (each with its payload's JSON
 *   Schema), whom it waits for, its deadline and policy; the last decision.
 */
function presentReview(job: JobDoc): Record<string, unknown> {
  const r = job.review;
  const spec = job.reviewSpec ? (JSON.parse(job.reviewSpec) as ReviewSpec) : null;
  const decision = r?.decision as { action: string; payload: object; by: string | null; at: Date } | null | undefined;
  // A blocked job's question waits under the review's deadline too, when it has one.
  const waiting = job.status === 'awaiting_review' || (job.status === 'blocked' && r?.deadline != null);
  return {
    state: r?.state ?? 'none',
    requested_at: iso(r?.requestedAt),
    feedback: r?.feedback ?? null,
    actions: pendingActions(job.status, spec).map((a) => ({
      name: a.name,
      schema: a.schema,
      ...(a.effect ? { effect: a.effect } : {}),
      ...(a.description ? { description: a.description } : {}),
    })),
    assignee: waiting ? (r?.assignee ?? null) : null,
    deadline: waiting ? iso(r?.deadline) : null,
    on_timeout: waiting ? (r?.onTimeout ?? null) : null,
    overdue_at: iso(r?.overdueAt),
    escalated_from: r?.escalatedFrom ?? null,
    decision: decision
      ? { action: decision.action, payload: decision.payload ?? {}, by: decision.by ?? null, at: iso(decision.at) }
      : null,
  };
}
