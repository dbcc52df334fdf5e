/**
 * @module missionRun: one run of a mission, started by its Temporal Schedule `mission-<missionId>` (on its times,
 * by a trigger, or by a backfill). The activity writes the run's job (for the mission's goal and open tasks; nothing
 * for a paused or deleted mission), then the job's workflow runs as a child and the run lasts as long as its job
 * [docs/decisions.md "Schedule policies"]: the Schedule's overlap policy then acts on runs that are really going
 * (`skip` skips a run due while the job runs, `cancel_other` cancels the job, ...), and a failed job fails the run,
 * which pauses a Schedule with pause-on-failure. The run records the skips the Schedule counted before it starts
 * (`mission.run_skipped`), and once it has closed through workflow `missionSkips`. Runs started before this shape (patch `mission-run-waits-for-job` absent) end once the
 * job has started, as they did.
 */
import {
  ApplicationFailure,
  ParentClosePolicy,
  patched,
  proxyActivities,
  startChild,
  WorkflowIdReusePolicy,
  workflowInfo,
} from '@temporalio/workflow';
import type { MissionActivities } from '../activities/missions';
import type { MissionRunInput } from './definitions';
import { workPriority } from './executionStart';
import { jobWorkflowId } from './ids';
import type { job } from './job';
import { agentIdKey, organizationIdKey, workKindKey } from './searchAttributes';

export type { MissionRunInput } from './definitions';

const { prepareMissionRun, recordMissionSkips, checkMissionSkipsLater, pauseMissionAfterFailure } =
  proxyActivities<MissionActivities>({
    startToCloseTimeout: '30 seconds',
    retry: { initialInterval: '500 milliseconds', maximumAttempts: 20 },
  });

/** The error type of a run whose job failed (the Schedule counts it as a failure: pause-on-failure). */
export const MISSION_RUN_FAILED = 'MissionRunFailed';

/**
 * @param input the mission.
 * @returns the job the run created (null when the mission is paused or gone) and how it ended.
 */
export async function missionRun(input: MissionRunInput): Promise<{ jobId: string | null; status?: string }> {
  const runId = workflowInfo().workflowId;
  const waits = patched('mission-run-waits-for-job');
  // Runs missed while the engine was down are counted just before the scheduler starts this one.
  if (waits) await recordMissionSkips({ missionId: input.missionId });
  const prepared = await prepareMissionRun({ missionId: input.missionId, runId });
  if (!prepared) return { jobId: null };
  const options = {
    workflowId: jobWorkflowId(prepared.jobId),
    args: [prepared.input] as Parameters<typeof job>,
    typedSearchAttributes: [
      { key: organizationIdKey, value: prepared.input.organizationId },
      { key: agentIdKey, value: prepared.input.agentId },
      { key: workKindKey, value: 'job' },
    ],
    memo: prepared.memo,
    // Background work: after interactive executions and jobs; the organization is its fairness key. The job's
    // iterations inherit it. (The Schedule's action takes no priority in @temporalio/client 1.24.)
    priority: workPriority('mission', prepared.input.organizationId),
  };
  if (!waits) {
    await startChild<typeof job>('job', { ...options, parentClosePolicy: ParentClosePolicy.ABANDON });
    return { jobId: prepared.jobId };
  }
  let child;
  try {
    child = await startChild<typeof job>('job', {
      ...options,
      // A run cancelled or terminated by the overlap policy (cancel_other, terminate_other) cancels its job.
      parentClosePolicy: ParentClosePolicy.REQUEST_CANCEL,
      // A time that already ran (a backfill over it: the same run id, the same job) does not run its job again.
      workflowIdReusePolicy: WorkflowIdReusePolicy.REJECT_DUPLICATE,
    });
  } catch (err) {
    if ((err as Error).name !== 'WorkflowExecutionAlreadyStartedError') throw err;
    return { jobId: prepared.jobId, status: 'already_run' };
  }
  const view = await child.result();
  // Skips by overlap happen while a run goes on, up to its close: they are read once it has closed.
  await checkMissionSkipsLater({ missionId: input.missionId });
  if (view.status === 'failed') {
    await pauseMissionAfterFailure({ missionId: input.missionId, runId });
    throw ApplicationFailure.nonRetryable(`The run's job ${prepared.jobId} failed`, MISSION_RUN_FAILED);
  }
  return { jobId: prepared.jobId, status: view.status };
}
