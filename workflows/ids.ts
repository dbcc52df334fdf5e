/**
 * Deterministic workflow ids (ARCHITECTURE.md §5): a second start for the same record is refused by Temporal, so
 * a duplicate request can never run the same work twice.
 */

/**
 * The input shape every starter of an execution workflow passes (workflows/agentExecution.ts `shape`): here, with
 * the workflow ids, so that starters need not import workflow code.
 */
export const EXECUTION_SHAPE = 2 as const;

/**
 * @param executionId the execution.
 * @returns `execution-<executionId>`.
 */
export function executionWorkflowId(executionId: string): string {
  return `execution-${executionId}`;
}

/**
 * @param jobId the job.
 * @returns `job-<jobId>`.
 */
export function jobWorkflowId(jobId: string): string {
  return `job-${jobId}`;
}

/**
 * @param missionId the mission.
 * @returns `mission-<missionId>`: the id of the mission's Temporal Schedule.
 */
export function missionScheduleId(missionId: string): string {
  return `mission-${missionId}`;
}

/**
 * @param repoId the workspace repository.
 * @returns `repo-clone-<repoId>`.
 */
export function repoCloneWorkflowId(repoId: string): string {
  return `repo-clone-${repoId}`;
}
