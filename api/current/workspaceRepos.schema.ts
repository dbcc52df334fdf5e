/**
 * JSON Schemas of the current surface's workspace repositories: the repository record (the `…/repos` routes and the
 * `git` initialization of a space), the routes' parameters and the clone stream's events.
 */
import type { Schema } from '../../lib/ajv';
import { REPO_STATUSES } from '../../models/WorkspaceRepo';
import { MAX_PATH_LENGTH } from '../../lib/workspace';
import {
  expiredEvent,
  httpUrl,
  nextCursor,
  nullableStr,
  nullableTimestamp,
  pathParams,
  record,
  requiredStr,
  str,
  timestamp,
} from '../schemas';

export const repoSchema: Schema = record({
  id: { type: 'string' },
  workspace_id: { type: 'string' },
  url: { type: 'string' },
  branch: nullableStr,
  path: { type: 'string', description: 'The folder of the workspace it is cloned into; empty: the workspace root' },
  depth: { type: 'integer' },
  credentials_env: nullableStr,
  status: { type: 'string', enum: [...REPO_STATUSES] },
  commit: nullableStr,
  error: nullableStr,
  cloned_at: nullableTimestamp,
  created_at: timestamp,
});

export const repoParams = pathParams('id', 'repoId');

export const repoCreateBody = record(
  {
    url: httpUrl(),
    branch: str(200, { description: 'Default: the remote’s default branch' }),
    path: str(MAX_PATH_LENGTH, { description: 'The folder (default: the URL’s last segment without .git)' }),
    depth: { type: 'integer', minimum: 1, maximum: 1000, description: 'History depth (default 1)' },
    credentials_env: str(200, {
      description: 'A space environment variable holding an access token (sent as HTTP basic auth)',
    }),
  },
  ['branch', 'path', 'depth', 'credentials_env']
);

export const cloneBody = record({ repo_id: requiredStr(100) });

export const repoResponse = record({ repo: repoSchema });
export const cloneResponse = record({ repo: repoSchema, events_url: { type: 'string' } });
export const repoListResponse = record({ repos: { type: 'array', items: repoSchema }, next_cursor: nextCursor });

/** The events of a repository's clone stream. */
export const repoEvents: Record<string, Schema> = {
  'clone.started': record({
    repo_id: { type: 'string' },
    attempt: { type: 'integer' },
    url: { type: 'string' },
    path: { type: 'string' },
  }),
  'clone.progress': record({
    repo_id: { type: 'string' },
    phase: { type: 'string', description: 'git’s phase, e.g. Receiving objects' },
    percent: { type: 'integer' },
  }),
  'clone.completed': record({ repo_id: { type: 'string' }, commit: { type: 'string' } }),
  'clone.failed': record({ repo_id: { type: 'string' }, message: { type: 'string' } }),
  expired: expiredEvent,
};
