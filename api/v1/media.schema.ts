/** JSON Schemas of /api/v1/media, and the `mediaIds` field an execute body references media with. */
import { MAX_EXECUTION_MEDIA, MAX_EXECUTION_MEDIA_BYTES } from '../../commands/media';
import type { Schema } from '../../lib/ajv';
import { MEDIA_TYPES } from '../../lib/mediaTypes';
import { idList, nextCursor, record, timestamp } from '../schemas';

/** The name of the upload's one file part. */
export const MEDIA_FILE_FIELD = 'file';

/** The upload body (multipart/form-data) as the OpenAPI document shows it. */
export const mediaUploadBody: Schema = {
  contentType: 'multipart/form-data',
  description:
    `One file part named \`${MEDIA_FILE_FIELD}\` with a filename; nothing else. The type is read from the content ` +
    `(${Object.keys(MEDIA_TYPES).join(', ')}): a part Content-Type that contradicts it is 415 (` +
    '`application/octet-stream` says nothing; text types, which have no signature, come from it or else from the ' +
    "name's extension). Over MEDIA_MAX_BYTES (5 MiB by default): 413, nothing kept.",
  schema: {
    type: 'object',
    required: [MEDIA_FILE_FIELD],
    properties: { [MEDIA_FILE_FIELD]: { type: 'string', format: 'binary', description: 'The file' } },
  },
};

/** An execute body's media: ids of the organization's media, sent to the model with the message. */
export const mediaIdList = idList(
  MAX_EXECUTION_MEDIA,
  'Media of the organization (ids from POST /api/v1/media) the model gets with the message: images as image ' +
    'blocks, text files as text, PDFs as documents (Anthropic models only); at most ' +
    `${MAX_EXECUTION_MEDIA}, ${MAX_EXECUTION_MEDIA_BYTES} bytes together`
);

export const mediaSchema: Schema = record(
  {
    id: { type: 'string' },
    name: { type: 'string' },
    contentType: { type: 'string', enum: Object.keys(MEDIA_TYPES) },
    size: { type: 'integer', minimum: 0 },
    sha256: { type: 'string', pattern: '^[0-9a-f]{64}$' },
    width: { type: 'integer', minimum: 1, description: 'Images only' },
    height: { type: 'integer', minimum: 1, description: 'Images only' },
    organizationId: { type: 'string' },
    ownerId: { type: 'string' },
    createdAt: timestamp,
  },
  ['width', 'height']
);

export const mediaResponse: Schema = record({ success: { type: 'boolean' }, media: mediaSchema });
export const mediaListResponse: Schema = record({
  success: { type: 'boolean' },
  media: { type: 'array', items: mediaSchema },
  total: { type: 'integer' },
  nextCursor,
});
