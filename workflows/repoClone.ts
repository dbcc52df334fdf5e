/**
 * @module repoClone: the durable clone of a workspace repository (workflow id `repo-clone-<repoId>`)
 * [docs/decisions.md "Repositories"]. cloneRepo runs git and heartbeats; a worker that dies mid-clone is noticed
 * by the heartbeat timeout and the clone starts again on another worker (its scratch folder over). A clone that
 * fails for good is recorded (failRepoClone) and the workflow fails, so `repos/clone` may start it again.
 */
import { ApplicationFailure, proxyActivities } from '@temporalio/workflow';
// Only import the activity types
import type { RepoActivities } from '../activities/repos';

export interface RepoCloneInput {
  repoId: string;
  /** REPO_CLONE_TIMEOUT_SECONDS when the api started it (git is killed after it). */
  timeoutSeconds: number;
}

/**
 * @param input the repository and the clone's time limit.
 * @returns the commit cloned.
 */
export async function repoClone(input: RepoCloneInput): Promise<{ commit: string }> {
  const { cloneRepo } = proxyActivities<RepoActivities>({
    startToCloseTimeout: `${input.timeoutSeconds + 60} seconds`,
    heartbeatTimeout: '5 seconds',
    retry: { initialInterval: '1 second', maximumAttempts: 3, nonRetryableErrorTypes: ['CloneRefused'] },
  });
  const { failRepoClone } = proxyActivities<RepoActivities>({
    startToCloseTimeout: '30 seconds',
    retry: { initialInterval: '500 milliseconds', maximumAttempts: 20 },
  });
  try {
    return await cloneRepo(input.repoId);
  } catch (err) {
    const cause = (err as { cause?: { message?: string } }).cause;
    const message = cause?.message ?? 'The clone failed';
    await failRepoClone({ repoId: input.repoId, message });
    throw ApplicationFailure.nonRetryable(message, 'CloneFailed');
  }
}
