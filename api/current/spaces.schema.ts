/** JSON Schemas of the client-library space endpoints: POST /api/spaces/{id}/init, POST|GET /api/spaces/{id}/environment. */
import type { Schema } from '../../lib/ajv';
import { MAX_PATH_LENGTH } from '../../lib/workspace';
import { SPACE_INIT_TYPES } from '../../models/Space';
import { httpUrl, record, requiredStr, str, strArray, timestamp } from '../schemas';
import { repoSchema } from './workspaceRepos.schema';

export const ENV_NAME_PATTERN = '^[A-Za-z_][A-Za-z0-9_]{0,127}$';

/** The fields of the `git` type: the mount of `POST /api/workspaces/{id}/repos`, in this body's camelCase. */
export const GIT_INIT_FIELDS = ['url', 'branch', 'path', 'depth', 'credentialsEnv'] as const;

export const spaceInitBody = {
  type: 'object',
  additionalProperties: false,
  required: ['type'],
  properties: {
    type: {
      type: 'string',
      enum: [...SPACE_INIT_TYPES],
      'x-message': 'Invalid type. Must be: empty, git, readme, starterKit',
    },
    orgId: str(100),
    spaceName: requiredStr(200),
    url: { ...httpUrl(), description: '`git` only, required there: the https repository to clone' },
    branch: str(200, { description: '`git` only: the branch (default: the remote’s default branch)' }),
    path: str(MAX_PATH_LENGTH, { description: '`git` only: the folder to clone into (default: the workspace root)' }),
    depth: { type: 'integer', minimum: 1, maximum: 1000, description: '`git` only: history depth (default 1)' },
    credentialsEnv: {
      type: 'string',
      pattern: ENV_NAME_PATTERN,
      'x-message': 'Invalid credentialsEnv: an environment variable name',
      description: '`git` only: a space environment variable holding an access token (sent as HTTP basic auth)',
    },
  },
} as const;

export const spaceInitResponse: Schema = record(
  {
    success: { type: 'boolean' },
    spaceId: { type: 'string' },
    type: { type: 'string', enum: [...SPACE_INIT_TYPES] },
    files: strArray(100, 500),
    repo: { ...repoSchema, description: '`git`: the repository mount, as GET /api/workspaces/{id}/repos/{repoId}' },
    eventsUrl: { type: 'string', description: '`git`: the clone’s progress stream' },
  },
  ['repo', 'eventsUrl']
);

export const spaceEnvironmentBody = {
  type: 'object',
  additionalProperties: false,
  required: ['environmentVariables'],
  properties: {
    environmentVariables: {
      type: 'object',
      maxProperties: 200,
      propertyNames: {
        pattern: ENV_NAME_PATTERN,
        'x-message': 'Invalid environment variable name: use letters, digits and _, not starting with a digit',
      },
      additionalProperties: { type: ['string', 'null'], maxLength: 32_768 },
      description: 'Name → value (null removes the variable). Values are encrypted at rest and never returned.',
    },
  },
} as const;

export const spaceEnvironmentResponse: Schema = record({
  success: { type: 'boolean' },
  variables: { type: 'array', items: record({ name: { type: 'string' }, updatedAt: timestamp }) },
});
