/**
 * Deterministic workflow ids (docs/architecture.md §5): a second start for the same record is refused by Temporal, so
 * a duplicate request can never run the same work twice.
 */

/**
 * The input shape every starter of an execution workflow passes (workflows/agentExecution.ts `shape`): here, with
 * the workflow ids, so that starters need not import workflow code.
 */
export const EXECUTION_SHAPE = 4 as const;

/**
 * The workflow task timeout of an execution (shapes 3 and 4 run the whole reply in its first workflow task, heartbeated by
 * the SDK at 80 % of it): a process that dies in the middle of a reply is noticed within this time, and another
 * worker continues the reply (docs/decisions.md "Execution shape 3").
 */
export const EXECUTION_TASK_TIMEOUT = '5 seconds';

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

/**
 * @param missionId the mission.
 * @returns `mission-skips-<missionId>`: the id of the workflow that records its skipped runs after its runs end.
 */
export function missionSkipsWorkflowId(missionId: string): string {
  return `mission-skips-${missionId}`;
}
