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
 * @param repoId the workspace repository.
 * @returns `repo-clone-<repoId>`.
 */
export function repoCloneWorkflowId(repoId: string): string {
  return `repo-clone-${repoId}`;
}
