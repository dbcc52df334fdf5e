/**
 * Workspace repository → public JSON (current surface, snake_case), the one representation shared by the
 * `…/repos` routes and the `git` initialization of `POST /api/spaces/{id}/init`.
 */
import type { WorkspaceRepoDoc } from '../models';
import { iso } from './time';

/**
 * @param r the stored repository.
 * @returns the public record (`path` `''` is the workspace root).
 */
export function presentRepo(r: WorkspaceRepoDoc): Record<string, unknown> {
  return {
    id: r._id,
    workspace_id: r.spaceId,
    url: r.url,
    branch: r.branch ?? null,
    path: r.path,
    depth: r.depth ?? 1,
    credentials_env: r.credentialsEnv ?? null,
    status: r.status,
    commit: r.commit ?? null,
    error: r.error ?? null,
    cloned_at: iso(r.clonedAt),
    created_at: r.createdAt.toISOString(),
  };
}

/**
 * @param r a repository.
 * @returns the path of its clone's progress stream.
 */
export function repoEventsUrl(r: Pick<WorkspaceRepoDoc, '_id' | 'spaceId'>): string {
  return `/api/workspaces/${r.spaceId}/repos/${r._id}/events`;
}
