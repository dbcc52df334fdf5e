/**
 * Updates and queries of the workflows (ARCHITECTURE.md §3): safe to import from the api, which sends them.
 */
import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import type { DeliveryInput } from '../commands/webhookDispatch';
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
}

/** The failure type a job's update validator rejects a wrong-state action with; `details[0]` is the state. */
export const JOB_STATE_CONFLICT = 'JobStateConflict';

export const jobUpdates = {
  approve: defineUpdate<JobView, [JobActionInput]>('approve'),
  iterate: defineUpdate<JobView, [JobActionInput]>('iterate'),
  resume: defineUpdate<JobView, [JobActionInput]>('resume'),
  cancel: defineUpdate<JobView, [JobActionInput]>('cancel'),
} satisfies Record<JobAction, unknown>;

export const jobStatusQuery = defineQuery<JobView>('status');

/**
 * Signal of a destination's delivery workflow (workflows/webhookDestination.ts): events (or redelivery runs) to
 * deliver. A key (event id, run) the destination already has or settled recently is a no-op.
 */
export const webhookDeliverSignal = defineSignal<[DeliveryInput[]]>('deliver');
