/**
 * A git repository mounted in a workspace [docs/decisions.md "Repositories"]: an https URL, a branch and the
 * folder of the workspace it is cloned into. `repos/clone` (or the `git` initialization of the space, whose mount
 * has the id {@link initRepoId}) clones it durably (workflow `repo-clone-<id>`); the activity keeps `status` and
 * `commit` current, and its progress is the event stream `repo:<id>`.
 */
import mongoose, { type InferSchemaType } from 'mongoose';

export const REPO_STATUSES = ['registered', 'cloning', 'ready', 'failed'] as const;
export type RepoStatus = (typeof REPO_STATUSES)[number];

const schema = new mongoose.Schema(
  {
    _id: { type: String, required: true },
    organizationId: { type: String, required: true },
    spaceId: { type: String, required: true },
    url: { type: String, required: true },
    /** null: the remote's default branch. */
    branch: { type: String, default: null },
    /** The folder of the workspace it is cloned into (parsed by parseWorkspacePath); '' is the workspace root. */
    path: { type: String, default: '' },
    /** History depth of the clone (1: the last commit only). */
    depth: { type: Number, default: 1 },
    /** Name of a space environment variable holding an access token (sent as HTTP basic auth), or null. */
    credentialsEnv: { type: String, default: null },
    status: { type: String, enum: REPO_STATUSES, default: 'registered' },
    /** The commit checked out, once cloned. */
    commit: { type: String, default: null },
    error: { type: String, default: null },
    clonedAt: { type: Date, default: null },
    createdBy: { type: String, required: true },
  },
  { timestamps: true, versionKey: false }
);

// A workspace's repositories, newest first (GET /api/workspaces/{id}/repos): the workspace bounds the query.
schema.index({ spaceId: 1, organizationId: 1, createdAt: -1, _id: -1 });

export type WorkspaceRepoDoc = InferSchemaType<typeof schema> & { _id: string; createdAt: Date; updatedAt: Date };
export const WorkspaceRepo = mongoose.model('WorkspaceRepo', schema, 'workspace_repos');

/** @returns the event stream of a repository's clones. */
export const repoStreamId = (repoId: string): string => `repo:${repoId}`;

/** @returns the id of the mount a space's `git` initialization records (one per space, so a repeat finds it). */
export const initRepoId = (spaceId: string): string => `repo_init_${spaceId}`;
