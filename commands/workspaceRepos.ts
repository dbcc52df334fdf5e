/**
 * Workspace repositories [docs/decisions.md "Repositories"]: record a mount (an https git URL, a branch, the
 * folder it is cloned into), list them, and clone one durably on Temporal (workflows/repoClone.ts); the `git`
 * initialization of a space is the same mount and clone.
 */
import { WorkflowExecutionAlreadyStartedError } from '@temporalio/client';
import { TypedSearchAttributes, WorkflowIdReusePolicy } from '@temporalio/common';
import { claimSpaceInit, type SpaceInitInput } from './spaces';
import type { AuthContext } from './tokens';
import { findWorkspace } from './workspaceFiles';
import type { Config } from '../lib/config';
import { AppError, ConflictError, NotFoundError, ServiceUnavailableError, ValidationError } from '../lib/errors';
import { newId } from '../lib/ids';
import { paginate } from '../lib/pagination';
import { assertSafeUrl, UnsafeDestinationError } from '../lib/safeDestination';
import type { TemporalDeps } from '../lib/temporal';
import { parseWorkspacePath } from '../lib/workspace';
import { initRepoId, WorkspaceRepo, type WorkspaceRepoDoc } from '../models';
import { repoCloneWorkflowId } from '../workflows/ids';
import type { repoClone } from '../workflows/repoClone';
import { organizationIdKey, workKindKey } from '../workflows/searchAttributes';
import { isDuplicateKey } from '../lib/mongo';

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

/** A mount's fields as stored. */
type MountFields = Pick<WorkspaceRepoDoc, 'url' | 'branch' | 'path' | 'depth' | 'credentialsEnv'>;

/**
 * The checks of a mount, made before anything is stored or claimed.
 * @param config WEBHOOK_ALLOW_PRIVATE (literal private addresses in the URL).
 * @param input URL (https, no credentials), branch, folder, depth, credentials variable.
 * @param defaultPath the folder when none is sent: the URL's last segment without `.git` (`repos`), or `''`, the
 *   workspace root (the `git` initialization).
 * @returns the fields to store.
 * @throws ValidationError for anything else.
 */
function parseMount(
  config: Pick<Config, 'webhookAllowPrivate'>,
  input: RepoInput,
  defaultPath: 'last-segment' | 'root'
): MountFields {
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
  let path = ''; // the workspace root
  if (input.path !== undefined) path = parseWorkspacePath(input.path);
  else if (defaultPath === 'last-segment') {
    const last = url.pathname
      .split('/')
      .filter(Boolean)
      .at(-1)
      ?.replace(/\.git$/, '');
    path = parseWorkspacePath(last || 'repo');
  }
  return {
    url: url.href,
    branch: input.branch ?? null,
    path,
    depth: input.depth ?? 1,
    credentialsEnv: input.credentialsEnv ?? null,
  };
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
  const mount = parseMount(config, input, 'last-segment');
  const { ws } = await findWorkspace(auth, id);
  const doc = await WorkspaceRepo.create({
    _id: newId('repo'),
    organizationId: ws.organizationId,
    spaceId: ws.spaceId,
    ...mount,
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
 * @param auth the caller.
 * @param id workspace id (another organization's: 404).
 * @param page limit and cursor.
 * @returns one page of the workspace's repositories, newest first.
 */
export async function listRepos(
  auth: AuthContext,
  id: string,
  page: { limit: number; cursor?: string }
): Promise<{ items: WorkspaceRepoDoc[]; nextCursor: string | null }> {
  const { ws } = await findWorkspace(auth, id);
  return paginate<WorkspaceRepoDoc>(WorkspaceRepo, { spaceId: ws.spaceId, organizationId: ws.organizationId }, page);
}

type CloneDeps = { temporal: TemporalDeps; config: Pick<Config, 'repoClone'> };

/**
 * Starts the durable clone of a mount (`repo-clone-<repoId>`); a clone already running (or done) is left alone.
 * @param deps Temporal and the clone time limit.
 * @param repo the mount.
 * @returns the record: status `cloning` when this call started it, else as it is now.
 */
async function launchClone(deps: CloneDeps, repo: WorkspaceRepoDoc): Promise<WorkspaceRepoDoc> {
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
      memo: { repoId: repo._id }, // ids only: no user text (docs/decisions.md "Observability: private payloads")
    });
  } catch (err) {
    if (err instanceof WorkflowExecutionAlreadyStartedError)
      return (await WorkspaceRepo.findById(repo._id).lean<WorkspaceRepoDoc>()) ?? repo;
    throw err instanceof AppError ? err : new ServiceUnavailableError();
  }
  // The activity records `cloning` itself (the api writes no status a running clone could overtake).
  return { ...repo, status: 'cloning' };
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
  deps: CloneDeps,
  auth: AuthContext,
  id: string,
  repoId: string
): Promise<WorkspaceRepoDoc> {
  const repo = await findRepo(auth, id, repoId);
  if (repo.status === 'ready') throw new ConflictError('The repository is already cloned');
  const now = await launchClone(deps, repo);
  if (now.status === 'ready') throw new ConflictError('The repository is already cloned');
  return now;
}

const sameMount = (a: MountFields, b: MountFields): boolean =>
  a.url === b.url &&
  (a.branch ?? null) === (b.branch ?? null) &&
  a.path === b.path &&
  (a.depth ?? 1) === (b.depth ?? 1) &&
  (a.credentialsEnv ?? null) === (b.credentialsEnv ?? null);

/**
 * The `git` initialization of a space [docs/decisions.md "Repositories"]: the same mount and durable clone as
 * `repos` + `repos/clone`, into the workspace root by default. Idempotent: the mount has a deterministic id
 * ({@link initRepoId}) and its clone a deterministic workflow id, so the same request again (a lost answer, two at
 * once) answers the same mount and starts no second clone; it starts the clone again only after a failure. Any
 * other initialization of a space already initialized is 409.
 * @param deps configuration (private addresses, clone limits) and Temporal.
 * @param auth the caller (who must be allowed to modify the space).
 * @param id space id.
 * @param input orgId, spaceName and the mount (url required).
 * @returns the mount, with the clone's status.
 */
export async function initGitSpace(
  deps: { temporal: TemporalDeps; config: Pick<Config, 'repoClone' | 'webhookAllowPrivate'> },
  auth: AuthContext,
  id: string,
  input: Omit<SpaceInitInput, 'type'> & Partial<RepoInput>
): Promise<WorkspaceRepoDoc> {
  if (input.url === undefined) throw new ValidationError('Missing required field: url');
  const mount = parseMount(deps.config, { ...input, url: input.url }, 'root');
  const { space, claimed } = await claimSpaceInit(auth, id, {
    type: 'git',
    orgId: input.orgId,
    spaceName: input.spaceName,
  });
  if (!claimed && space.initializedAs !== 'git') throw new ConflictError('Space already initialized');
  const repoId = initRepoId(space._id);
  let repo = await WorkspaceRepo.findById(repoId).lean<WorkspaceRepoDoc>();
  if (!repo) {
    // The claim's first caller, or a repeat after it died before this point; two at once: one insert wins.
    await WorkspaceRepo.create({
      _id: repoId,
      organizationId: space.organizationId,
      spaceId: space._id,
      ...mount,
      createdBy: auth.userId,
    }).catch((err: unknown) => {
      if (!isDuplicateKey(err)) throw err;
    });
    repo = await WorkspaceRepo.findById(repoId).lean<WorkspaceRepoDoc>();
    if (!repo) throw new ServiceUnavailableError();
  }
  if (!sameMount(repo, mount)) throw new ConflictError('Space already initialized');
  if (repo.status === 'ready') return repo;
  return launchClone(deps, repo);
}
