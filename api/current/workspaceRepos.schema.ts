/**
 * JSON Schemas of the current surface's workspace repositories: the repository record (the `…/repos` routes and the
 * `git` initialization of a space), the routes' parameters and the clone stream's events.
 */
import type { Schema } from '../../lib/ajv';
import { REPO_STATUSES } from '../../models/WorkspaceRepo';
import { expiredEvent, nullableStr, nullableTimestamp, record, timestamp } from '../schemas';

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

export const repoParams: Schema = {
  type: 'object',
  required: ['id', 'repoId'],
  properties: {
    id: { type: 'string', minLength: 1, maxLength: 100 },
    repoId: { type: 'string', minLength: 1, maxLength: 100 },
  },
};

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
