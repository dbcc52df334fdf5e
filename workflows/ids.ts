/**
 * Deterministic workflow ids (ARCHITECTURE.md §5): a second start for the same record is refused by Temporal, so
 * a duplicate request can never run the same work twice.
 */

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
