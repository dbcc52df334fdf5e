/**
 * @module missionRun: one run of a mission, started by its Temporal Schedule `mission-<missionId>` (on its times,
 * or by a trigger). The activity writes the run's job (for the mission's goal and open tasks; nothing for a paused
 * or deleted mission), then the job's workflow starts as an abandoned child: it outlives the run, which ends here.
 */
import { ParentClosePolicy, proxyActivities, startChild, workflowInfo } from '@temporalio/workflow';
import type { MissionActivities } from '../activities/missions';
import { jobWorkflowId } from './ids';
import type { job } from './job';
import { agentIdKey, organizationIdKey, workKindKey } from './searchAttributes';

export interface MissionRunInput {
  missionId: string;
}

const { prepareMissionRun } = proxyActivities<MissionActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '500 milliseconds', maximumAttempts: 20 },
});

/**
 * @param input the mission.
 * @returns the job the run created (null when the mission is paused or gone).
 */
export async function missionRun(input: MissionRunInput): Promise<{ jobId: string | null }> {
  const runId = workflowInfo().workflowId;
  const prepared = await prepareMissionRun({ missionId: input.missionId, runId });
  if (!prepared) return { jobId: null };
  await startChild<typeof job>('job', {
    workflowId: jobWorkflowId(prepared.jobId),
    args: [prepared.input],
    parentClosePolicy: ParentClosePolicy.ABANDON,
    typedSearchAttributes: [
      { key: organizationIdKey, value: prepared.input.organizationId },
      { key: agentIdKey, value: prepared.input.agentId },
      { key: workKindKey, value: 'job' },
    ],
    memo: prepared.memo,
  });
  return { jobId: prepared.jobId };
}
