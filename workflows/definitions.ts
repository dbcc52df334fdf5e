/**
 * Updates, queries and signals of the workflows, and the inputs and results that other folders hand them or take
 * from them (docs/architecture.md §3): safe to import from the api, commands and activities.
 */
import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import type { JobAction, JobStatus } from './jobStates';

/** What a job action returns: the job's state once the action's transition is mirrored. */
export interface JobView {
  id: string;
  status: JobStatus;
  /** Number of transitions mirrored so far. */
  transition: number;
  iterations: number;
}

/** The text an action carries: feedback (iterate), the input asked for (resume), the next step (approve). */
export interface JobActionInput {
  text?: string;
  /**
   * The action's payload, validated against its schema (workflows/reviews.ts) in the update's validator. Absent:
   * built from `text` (`{feedback}`, `{input}`, `{next_step}`), as before typed reviews.
   */
  payload?: Record<string, unknown>;
  /** Who decided (a user id), recorded with the decision. */
  by?: string;
}

/** A declared (custom) review action (update `decide`). */
export interface JobDecisionInput {
  action: string;
  payload: Record<string, unknown>;
  by?: string;
}

/** The failure type a job's update validator rejects an invalid payload with (400). */
export const JOB_PAYLOAD_INVALID = 'JobPayloadInvalid';

/** The failure type a job's update validator rejects a wrong-state action with; `details[0]` is the state. */
export const JOB_STATE_CONFLICT = 'JobStateConflict';

export const jobUpdates = {
  approve: defineUpdate<JobView, [JobActionInput]>('approve'),
  iterate: defineUpdate<JobView, [JobActionInput]>('iterate'),
  resume: defineUpdate<JobView, [JobActionInput]>('resume'),
  cancel: defineUpdate<JobView, [JobActionInput]>('cancel'),
} satisfies Record<JobAction, unknown>;
/** A declared review action of the job (workflows/reviews.ts `ReviewSpec.actions`). */
export const jobDecideUpdate = defineUpdate<JobView, [JobDecisionInput]>('decide');

export const jobStatusQuery = defineQuery<JobView>('status');

/**
 * Signal of a job paused as `needs_attention` by a spent budget: a budget covering it was raised or removed
 * (commands/budgets.ts sends it only when no budget covering the job is spent any more); the job runs its iteration again.
 */
export const budgetChangedSignal = defineSignal('budgetChanged');

/** One delivery run of one event, as its destination's workflow receives it. */
export interface DeliveryInput {
  eventId: string;
  organizationId: string;
  /** 1 for the first delivery, n+1 for each redelivery. */
  run: number;
  /** The event's type. */
  type?: string;
  /**
   * The exact JSON body sent (SPEC "Webhook delivery"), so that an attempt needs no read of the event. Absent only
   * in runs started before it was passed, or carried across continue-as-new without it: their attempts read the event.
   */
  body?: string;
}

/** What a test delivery (workflow `webhookTest`) returns: the attempt's outcome, in the API's field names. */
export interface TestResult {
  event_id: string;
  delivered: boolean;
  status: number | null;
  latency_ms: number;
  error: string | null;
}

/**
 * Signal of a destination's delivery workflow (workflows/webhookDestination.ts): events (or redelivery runs) to
 * deliver. A key (event id, run) the destination already has or settled recently is a no-op.
 */
export const webhookDeliverSignal = defineSignal<[DeliveryInput[]]>('deliver');

/** What a mission run (workflows/missionRun.ts) is started with by its Schedule. */
export interface MissionRunInput {
  missionId: string;
}

/** Signal of a mission's skip check (workflows/missionSkips.ts): one of its runs ended; read the counters again. */
export const missionRunEndedSignal = defineSignal('missionRunEnded');

/** What an execution's workflow (`agentExecution`, `execution-<executionId>`) is started with. */
export interface AgentExecutionInput {
  executionId: string;
  /** Overall deadline of the reply in seconds (EXECUTION_DEADLINE_SECONDS when the api started it). */
  deadlineSeconds?: number;
  /**
   * 4 (every start since it exists, {@link EXECUTION_SHAPE}): the model call and the finish in one local activity
   * (runExecution), the model call with its own deadline. 3: the model call a local activity with its own deadline,
   * then the local finish. 2: the model call a regular activity under a deadline timer, then the local finish, with
   * no patch checks (each `patched()` call writes a marker and a search-attribute upsert into the history). Absent: a
   * history recorded before, replayed through its patches as recorded.
   */
  shape?: 2 | 3 | 4;
  /**
   * It has concurrency keys to hold before its reply (docs/fairness.md "Concurrency keys"): the workflow claims them
   * (activity claimConcurrency), waiting for {@link concurrencyGrantedSignal} or re-checking every
   * CONCURRENCY_RECHECK while queued. Absent: none (no step, no history event more).
   */
  concurrency?: boolean;
}

/** Signal of a queued execution's workflow: a key it waits for has room; it claims again. */
export const concurrencyGrantedSignal = defineSignal('concurrencyGranted');

/** What an execution's workflow returns. */
export interface AgentExecutionOutcome {
  status: 'completed' | 'failed' | 'cancelled';
  /** The reply (completed executions), so the api answers a JSON execute without reading it back. */
  text?: string;
  /** Why a failed execution stopped, when its work may resume: a spent budget (a job then needs attention). */
  reason?: 'budget_reached';
}

/** The execution workflow's signature, for typed starts and handles outside workflows/ (no import of its code). */
export type AgentExecutionWorkflow = (input: AgentExecutionInput) => Promise<AgentExecutionOutcome>;
