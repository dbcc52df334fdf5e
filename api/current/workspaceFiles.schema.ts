/** JSON Schemas of the current surface's workspace files, shares and apps (api/current/workspaceFiles.ts). */
import { PREVIEW_DEFAULT_BYTES, PREVIEW_MAX_BYTES } from '../../commands/filePreview';
import { SHARE_DEFAULT_SECONDS, SHARE_MAX_SECONDS } from '../../commands/workspaceLinks';
import type { Schema } from '../../lib/ajv';
import { MAX_PATH_LENGTH } from '../../lib/workspace';
import { idParams, nullableTimestamp, pathParams, record, requiredStr, str, timestamp } from '../schemas';

export const pathField = (description: string) => str(MAX_PATH_LENGTH, { description });
export const requiredPath = (description: string) => requiredStr(MAX_PATH_LENGTH, { description });

export const entrySchema: Schema = record({
  path: { type: 'string' },
  name: { type: 'string' },
  type: { type: 'string', enum: ['file', 'directory', 'symlink', 'other'] },
  size: { type: 'integer' },
  modified_at: timestamp,
});

export const fileQuery = {
  type: 'object',
  additionalProperties: false,
  required: ['path'],
  properties: { path: requiredPath('The file, relative to the workspace root (`/` separators)') },
} as const;

export const binary = (description: string): Schema => ({ contentType: 'application/octet-stream', description });

// Requests.

export const listingQuery = {
  type: 'object',
  additionalProperties: false,
  properties: { path: pathField('The directory; empty or `.` for the workspace root') },
} as const;

export const deleteQuery = {
  type: 'object',
  additionalProperties: false,
  required: ['path'],
  properties: {
    path: requiredPath('The file or directory'),
    recursive: { type: 'boolean', default: false, description: 'Delete a directory with its content' },
  },
} as const;

export const directoryBody = record({ path: requiredPath('The directory') });

export const moveBody = record(
  {
    from: requiredPath('The file or directory to move'),
    to: requiredPath('Its new path'),
    overwrite: { type: 'boolean', description: 'Replace an existing destination (default false: 409)' },
  },
  ['overwrite']
);

export const previewBody = record(
  {
    path: requiredPath('The file'),
    max_bytes: {
      type: 'integer',
      minimum: 1,
      maximum: PREVIEW_MAX_BYTES,
      description: `Bytes of text to return (default ${PREVIEW_DEFAULT_BYTES})`,
    },
  },
  ['max_bytes']
);

export const shareBody = record(
  {
    path: requiredPath('The file'),
    expires_in_seconds: {
      type: 'integer',
      minimum: 1,
      maximum: SHARE_MAX_SECONDS,
      description: `Lifetime of the URL (default ${SHARE_DEFAULT_SECONDS} s)`,
    },
  },
  ['expires_in_seconds']
);

export const linkParams = {
  type: 'object',
  required: ['id', 'shareId'],
  properties: {
    id: idParams.properties.id,
    shareId: { ...idParams.properties.id, description: 'A share (`shr_…`) or app (`app_…`) id' },
  },
} as const;

export const appBody = record({
  name: requiredStr(200),
  path: requiredPath(
    'The folder served (not the workspace root, not a hidden folder); its index.html is the home page'
  ),
});

/** The public routes' `:token`. */
export const tokenParams = pathParams('token');

export const appFileParams = {
  type: 'object',
  required: ['token', 'path'],
  properties: {
    token: tokenParams.properties.token,
    path: { type: 'string', maxLength: MAX_PATH_LENGTH, description: 'The file inside the app (may hold `/`)' },
  },
} as const;

export const linkSchema = (kind: 'share' | 'app'): Schema =>
  record(
    {
      id: { type: 'string' },
      ...(kind === 'app' ? { name: { type: 'string' } } : {}),
      path: { type: 'string' },
      url: { type: 'string', format: 'uri' },
      expires_at: nullableTimestamp,
      created_at: timestamp,
    },
    []
  );

export const previewSchema: Schema = record(
  {
    path: { type: 'string' },
    name: { type: 'string' },
    size: { type: 'integer' },
    modified_at: timestamp,
    content_type: { type: 'string' },
    kind: { type: 'string', enum: ['text', 'markdown', 'code', 'image', 'binary'] },
    language: { type: 'string' },
    text: { type: 'string' },
    truncated: { type: 'boolean' },
    image: record({ format: { type: 'string' }, width: { type: 'integer' }, height: { type: 'integer' } }),
    thumbnail: record({
      content_type: { type: 'string' },
      width: { type: 'integer' },
      height: { type: 'integer' },
      data_base64: { type: 'string' },
    }),
  },
  ['language', 'text', 'truncated', 'image', 'thumbnail']
);

// Responses.

export const listingResponse = record({ path: { type: 'string' }, entries: { type: 'array', items: entrySchema } });
export const fileResponse = record({ file: entrySchema });
export const deletedResponse = record({ deleted: { type: 'boolean' }, path: { type: 'string' } });
export const directoryResponse = record({ created: { type: 'boolean' }, directory: entrySchema });
export const previewResponse = record({ preview: previewSchema });
export const shareResponse = record({ share: linkSchema('share') });
export const revokedResponse = record({ id: { type: 'string' }, revoked_at: timestamp });
export const appResponse = record({ app: linkSchema('app') });
