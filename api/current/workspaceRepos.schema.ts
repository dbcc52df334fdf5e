/** The repository record of the current surface: the `…/repos` routes and the `git` initialization of a space. */
import type { Schema } from '../../lib/ajv';
import { REPO_STATUSES } from '../../models/WorkspaceRepo';
import { nullableStr, nullableTimestamp, record, timestamp } from '../schemas';

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
