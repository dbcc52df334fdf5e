/** JSON Schemas of the current surface's workspace files, shares and apps (api/current/workspaceFiles.ts). */
import type { Schema } from '../../lib/ajv';
import { MAX_PATH_LENGTH } from '../../lib/workspace';
import { nullableTimestamp, record, requiredStr, str, timestamp } from '../schemas';

export const pathField = (description: string): Schema => str(MAX_PATH_LENGTH, { description });
export const requiredPath = (description: string): Schema => requiredStr(MAX_PATH_LENGTH, { description });

export const entrySchema: Schema = record({
  path: { type: 'string' },
  name: { type: 'string' },
  type: { type: 'string', enum: ['file', 'directory', 'symlink', 'other'] },
  size: { type: 'integer' },
  modified_at: timestamp,
});

export const fileQuery: Schema = {
  type: 'object',
  additionalProperties: false,
  required: ['path'],
  properties: { path: requiredPath('The file, relative to the workspace root (`/` separators)') },
};

export const binary = (description: string): Schema => ({ contentType: 'application/octet-stream', description });

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
