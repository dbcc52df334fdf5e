/**
 * A job: long-running work by an agent toward a goal in a workspace, run by workflow `job-<id>` in one or more
 * iterations (each an agent execution in the job's own chat session, linked by `jobId`). The workflow is the
 * source of truth; its activities mirror its state here for reads (activities/jobs.ts). States and transitions:
 * workflows/jobStates.ts [docs/decisions.md "Jobs"].
 */
import mongoose, { type InferSchemaType } from 'mongoose';
import { newId } from '../lib/ids';
// The statuses are the job workflow's: it needs them as values and may take values only from workflows/, so the model
// takes them from there, a pure module that imports nothing [docs/decisions.md "Layout (issue 29, second part)"].
import { JOB_STATUSES } from '../workflows/jobStates';
import { REVIEW_TIMEOUT_POLICIES } from '../workflows/reviews';

export { JOB_STATUSES, TERMINAL_JOB_STATUSES, type JobStatus } from '../workflows/jobStates';
export {
  NO_REVIEW_DEADLINE,
  pendingActions,
  REVIEW_ACTION_EFFECTS,
  REVIEW_TIMEOUT_POLICIES,
  type ReviewSpec,
} from '../workflows/reviews';

// rejected, expired: a review's deadline passed with auto_reject or cancel (issue 40).
export const REVIEW_STATES = ['none', 'pending', 'approved', 'changes_requested', 'rejected', 'expired'] as const;
export type ReviewState = (typeof REVIEW_STATES)[number];

/** Why an iteration ran: the goal, a reviewer's feedback, the input the agent asked for, or an approved next step. */
export const ITERATION_REASONS = ['goal', 'feedback', 'input', 'next_step'] as const;
export type IterationReason = (typeof ITERATION_REASONS)[number];

const iterationSchema = new mongoose.Schema(
  {
    n: { type: Number, required: true },
    executionId: { type: String, required: true },
    reason: { type: String, enum: ITERATION_REASONS, required: true },
    /** What the human sent (feedback, input, next step); empty for the first iteration. */
    input: { type: String, default: '' },
    status: { type: String, default: 'running' },
    startedAt: { type: Date, default: null },
    completedAt: { type: Date, default: null },
  },
  { _id: false }
);

const artifactSchema = new mongoose.Schema(
  {
    id: { type: String, required: true },
    name: { type: String, required: true },
    kind: { type: String, default: 'reply' },
    executionId: { type: String, default: null },
    /** The artifact's text (an iteration's reply), capped. */
    content: { type: String, default: '' },
    updatedAt: { type: Date, default: null },
  },
  { _id: false }
);

const schema = new mongoose.Schema(
  {
    _id: { type: String, default: () => newId('job') },
    organizationId: { type: String, required: true },
    /** Who created it (a user; a mission run acts for the mission's creator). */
    userId: { type: String, required: true },
    agentId: { type: String, required: true },
    spaceId: { type: String, required: true },
    /** The job's own chat and session: every iteration is a turn in it. */
    chatId: { type: String, required: true },
    sessionId: { type: String, required: true },
    title: { type: String, required: true },
    goal: { type: String, required: true },
    status: { type: String, enum: JOB_STATUSES, default: 'queued' },
    /** Number of the last transition mirrored (the workflow's counter; an older, retried mirror is ignored). */
    transitionSeq: { type: Number, default: 0 },
    /** Last seq written to the job's event stream (`job:<id>`) by the workflow's activities. */
    streamSeq: { type: Number, default: 0 },
    review: {
      state: { type: String, enum: REVIEW_STATES, default: 'none' },
      requestedAt: { type: Date, default: null },
      feedback: { type: String, default: null },
      /** Typed reviews (issue 40): whom the review waits for, its deadline and policy, and what happened. */
      assignee: { type: String, default: null },
      deadline: { type: Date, default: null },
      onTimeout: { type: String, enum: REVIEW_TIMEOUT_POLICIES, default: null },
      overdueAt: { type: Date, default: null },
      escalatedFrom: { type: String, default: null },
      /** The last decision: `{action, payload, by, at}`. */
      decision: { type: mongoose.Schema.Types.Mixed, default: null },
    },
    /**
     * The job's review declaration (workflows/reviews.ts `ReviewSpec`) as JSON text: declared JSON Schemas may hold
     * `$`-prefixed keys, which a stored document may not. Null: built-in actions, no deadline.
     */
    reviewSpec: { type: String, default: null },
    /** The inbox's keys (GET /api/jobs/inbox), set when a review is asked for: its assignee, and its deadline
     * (NO_REVIEW_DEADLINE when it has none, so that it sorts last). */
    reviewAssignee: { type: String, default: null },
    reviewDueAt: { type: Date, default: null },
    /** The agent's question while `blocked`. */
    question: { type: String, default: null },
    iterations: { type: [iterationSchema], default: [] },
    artifacts: { type: [artifactSchema], default: [] },
    error: { type: new mongoose.Schema({ message: String, code: String }, { _id: false }), default: null },
    missionId: { type: String, default: null },
    /** The mission run (its workflow id) that created the job. */
    missionRunId: { type: String, default: null },
    taskId: { type: String, default: null },
    parentJobId: { type: String, default: null },
    /**
     * The caller's concurrency key its iterations hold before each runs (POST /api/missions/{id}/tasks/{taskId}/
     * start-work `concurrency_key`; docs/fairness.md "Concurrency keys"), as an execution's `concurrency`. Absent: none.
     */
    concurrency: {
      type: [new mongoose.Schema({ key: String, limit: Number }, { _id: false })],
      default: undefined,
    },
    /**
     * A rerun's origin (POST /api/jobs/{id}/rerun, commands/jobReruns.ts): the job rerun, the iteration and the step
     * of its execution it was rerun from, and that execution. Null otherwise [docs/decisions.md "Job reruns"].
     */
    rerunOf: {
      type: new mongoose.Schema(
        {
          jobId: { type: String, required: true },
          iteration: { type: Number, required: true },
          step: { type: Number, required: true },
          executionId: { type: String, required: true },
        },
        { _id: false }
      ),
      default: null,
    },
    /** `rerunOf.jobId` at the top level, for the index that lists a job's reruns (equality on top-level fields). */
    rerunOfJobId: { type: String, default: null },
    metadata: { type: mongoose.Schema.Types.Mixed, default: {} },
    startedAt: { type: Date, default: null },
    completedAt: { type: Date, default: null },
  },
  { timestamps: true, versionKey: false, minimize: false }
);
// GET /api/jobs and its filters (docs/query-shapes.md): equality on the organization and one filter, newest first.
schema.index({ organizationId: 1, createdAt: -1, _id: -1 });
schema.index({ organizationId: 1, status: 1, createdAt: -1, _id: -1 });
schema.index({ organizationId: 1, missionId: 1, createdAt: -1, _id: -1 });
schema.index({ organizationId: 1, agentId: 1, createdAt: -1, _id: -1 });
schema.index({ organizationId: 1, chatId: 1, createdAt: -1, _id: -1 });
// The review inbox (GET /api/jobs/inbox): jobs awaiting review, oldest deadline first, of one assignee or all.
schema.index({ organizationId: 1, status: 1, reviewDueAt: 1, _id: 1 });
schema.index({ organizationId: 1, reviewAssignee: 1, status: 1, reviewDueAt: 1, _id: 1 });
// Lineage: the children of a job.
schema.index({ organizationId: 1, parentJobId: 1, createdAt: -1, _id: -1 });
// Lineage: the reruns of a job.
schema.index({ organizationId: 1, rerunOfJobId: 1, createdAt: -1, _id: -1 });

export interface JobIteration {
  n: number;
  executionId: string;
  reason: IterationReason;
  input: string;
  status: string;
  startedAt: Date | null;
  completedAt: Date | null;
}

export interface JobArtifact {
  id: string;
  name: string;
  kind: string;
  executionId: string | null;
  content: string;
  updatedAt: Date | null;
}

export type JobDoc = Omit<InferSchemaType<typeof schema>, 'iterations' | 'artifacts'> & {
  _id: string;
  iterations: JobIteration[];
  artifacts: JobArtifact[];
  createdAt: Date;
  updatedAt: Date;
};
export const Job = mongoose.model('Job', schema, 'jobs');

/**
 * @param jobId the job.
 * @returns the id of its durable event stream (commands/eventLog.ts), written by the job workflow's activities.
 */
export const jobStreamId = (jobId: string): string => `job:${jobId}`;
