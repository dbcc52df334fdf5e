/**
 * Workspace repositories [docs/decisions.md "Repositories"]: record a mount (an https git URL, a branch, the
 * folder it is cloned into) and clone it durably on Temporal (workflows/repoClone.ts).
 */
import { WorkflowExecutionAlreadyStartedError } from '@temporalio/client';
import { TypedSearchAttributes, WorkflowIdReusePolicy } from '@temporalio/common';
import type { AuthContext } from './tokens';
import { findWorkspace } from './workspaceFiles';
import type { Config } from '../lib/config';
import { AppError, ConflictError, NotFoundError, ServiceUnavailableError, ValidationError } from '../lib/errors';
import { newId } from '../lib/ids';
import { assertSafeUrl, UnsafeDestinationError } from '../lib/safeDestination';
import type { TemporalDeps } from '../lib/temporal';
import { parseWorkspacePath } from '../lib/workspace';
import { WorkspaceRepo, type WorkspaceRepoDoc } from '../models';
import { repoCloneWorkflowId } from '../workflows/ids';
import type { repoClone } from '../workflows/repoClone';
import { organizationIdKey, workKindKey } from '../workflows/searchAttributes';

/** A branch name git accepts that cannot be read as an option. */
const BRANCH = /^(?!-)(?!.*\.\.)[A-Za-z0-9._/-]{1,200}$/;
/** A space environment variable name. */
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

export interface RepoInput {
  url: string;
  branch?: string;
  path?: string;
  depth?: number;
  credentialsEnv?: string;
}

/**
 * Records a repository mount (nothing is fetched yet).
 * @param config WEBHOOK_ALLOW_PRIVATE (literal private addresses in the URL).
 * @param auth the caller.
 * @param id workspace id.
 * @param input URL (https), branch, folder (default: the URL's last segment without `.git`), depth, credentials.
 * @returns the record.
 */
export async function createRepo(
  config: Pick<Config, 'webhookAllowPrivate'>,
  auth: AuthContext,
  id: string,
  input: RepoInput
): Promise<WorkspaceRepoDoc> {
  let url: URL;
  try {
    url = assertSafeUrl(input.url, { allowPrivate: config.webhookAllowPrivate });
  } catch (err) {
    if (err instanceof UnsafeDestinationError) throw new ValidationError(`Invalid url: ${err.message}`);
    throw err;
  }
  if (input.branch !== undefined && !BRANCH.test(input.branch)) throw new ValidationError('Invalid branch name');
  if (input.credentialsEnv !== undefined && !ENV_NAME.test(input.credentialsEnv))
    throw new ValidationError('Invalid credentials_env: an environment variable name');
  const fallback =
    url.pathname
      .split('/')
      .filter(Boolean)
      .at(-1)
      ?.replace(/\.git$/, '') || 'repo';
  const rel = parseWorkspacePath(input.path ?? fallback);
  const { ws } = await findWorkspace(auth, id);
  const doc = await WorkspaceRepo.create({
    _id: newId('repo'),
    organizationId: ws.organizationId,
    spaceId: ws.spaceId,
    url: url.href,
    branch: input.branch ?? null,
    path: rel,
    depth: input.depth ?? 1,
    credentialsEnv: input.credentialsEnv ?? null,
    createdBy: auth.userId,
  });
  return doc.toObject() as WorkspaceRepoDoc;
}

/**
 * @param auth the caller.
 * @param id workspace id.
 * @param repoId the repository.
 * @returns the repository of that workspace.
 */
export async function findRepo(auth: AuthContext, id: string, repoId: string): Promise<WorkspaceRepoDoc> {
  const { ws } = await findWorkspace(auth, id);
  const repo = await WorkspaceRepo.findOne({ _id: repoId, organizationId: ws.organizationId }).lean<WorkspaceRepoDoc>();
  if (!repo || repo.spaceId !== ws.spaceId) throw new NotFoundError('Repository not found');
  return repo;
}

/**
 * Starts the durable clone (`repo-clone-<repoId>`). A clone already running answers its record again; a
 * repository already cloned is 409; one whose clone failed may be cloned again.
 * @param deps Temporal and the clone time limit.
 * @param auth the caller.
 * @param id workspace id.
 * @param repoId the repository.
 * @returns the record (status `cloning`, or as it is when a clone already runs).
 */
export async function startClone(
  deps: { temporal: TemporalDeps; config: Pick<Config, 'repoClone'> },
  auth: AuthContext,
  id: string,
  repoId: string
): Promise<WorkspaceRepoDoc> {
  const repo = await findRepo(auth, id, repoId);
  if (repo.status === 'ready') throw new ConflictError('The repository is already cloned');
  try {
    await deps.temporal.client.workflow.start<typeof repoClone>('repoClone', {
      workflowId: repoCloneWorkflowId(repo._id),
      taskQueue: deps.temporal.taskQueue,
      args: [{ repoId: repo._id, timeoutSeconds: deps.config.repoClone.timeoutSeconds }],
      workflowIdReusePolicy: WorkflowIdReusePolicy.ALLOW_DUPLICATE_FAILED_ONLY,
      typedSearchAttributes: new TypedSearchAttributes([
        { key: organizationIdKey, value: repo.organizationId },
        { key: workKindKey, value: 'repo-clone' },
      ]),
      memo: { url: repo.url, path: repo.path },
    });
  } catch (err) {
    if (err instanceof WorkflowExecutionAlreadyStartedError) {
      const now = await findRepo(auth, id, repoId);
      if (now.status === 'ready') throw new ConflictError('The repository is already cloned');
      return now;
    }
    throw err instanceof AppError ? err : new ServiceUnavailableError();
  }
  // The activity records `cloning` itself (the api writes no status a running clone could overtake).
  return { ...repo, status: 'cloning' };
}
