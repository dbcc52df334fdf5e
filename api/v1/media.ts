/**
 * /api/v1/media: upload (multipart/form-data, the type read from the content, size capped), read, list, download,
 * delete [commands/media.ts, docs/decisions.md "Media"]. Executions reference media through `mediaIds`.
 */
import {
  createMedia,
  deleteMedia,
  findMedia,
  listMedia,
  mediaDeps,
  openMedia,
  receiveMedia,
  tooLarge,
} from '../../commands/media';
import type { Config } from '../../lib/config';
import { UnsupportedContentEncodingError } from '../../lib/errors';
import { presentMedia } from '../../presenters/media';
import { sendFile } from '../download';
import { readFilePart } from '../multipart';
import { route, type RouteSpec } from '../route';
import { idParams, pageQuery, successMessage } from '../schemas';
import { MEDIA_FILE_FIELD, mediaListResponse, mediaResponse, mediaUploadBody } from './media.schema';

const tags = ['Media'];

/** Bytes a multipart body may hold besides the file (boundaries, part headers) before its length alone is 413. */
const MULTIPART_OVERHEAD = 64 * 1024;

/**
 * @param config the media settings.
 * @returns the route declarations.
 */
export function mediaRoutes(config: Readonly<Config>): RouteSpec[] {
  const deps = mediaDeps(config);
  return [
    route({
      method: 'post',
      path: '/media',
      summary: 'Upload a medium (multipart/form-data, one file part named `file`); its type is read from its content',
      tags,
      auth: 'v1',
      rawBody: mediaUploadBody,
      responses: { 200: mediaResponse },
      errors: [400],
      handler: async (ctx) => {
        const coding = ctx.get('content-encoding').trim().toLowerCase();
        if (coding !== '' && coding !== 'identity')
          throw new UnsupportedContentEncodingError('Uploads take no Content-Encoding: send the bytes as they are');
        const length = ctx.get('content-length');
        if (length !== '' && Number(length) > deps.maxBytes + MULTIPART_OVERHEAD) throw tooLarge(deps);
        const auth = ctx.state.auth;
        const { part, result } = await readFilePart(
          ctx.req,
          MEDIA_FILE_FIELD,
          (file) => receiveMedia(deps, auth, file),
          (received) => deps.storage.discard(received)
        );
        const media = await createMedia(deps, auth, result, { name: part.filename, contentType: part.mimeType });
        ctx.body = { success: true, media: presentMedia(media) };
      },
    }),
    route({
      method: 'get',
      path: '/media',
      summary: 'List the organization’s media, newest first',
      tags,
      auth: 'v1',
      query: pageQuery(),
      responses: { 200: mediaListResponse },
      handler: async (ctx, { query: page }) => {
        const { items, total, nextCursor } = await listMedia(ctx.state.auth, page);
        ctx.body = { success: true, media: items.map(presentMedia), total, nextCursor };
      },
    }),
    route({
      method: 'get',
      path: '/media/:id',
      summary: 'Read a medium’s metadata',
      tags,
      auth: 'v1',
      params: idParams,
      responses: { 200: mediaResponse },
      handler: async (ctx, { params }) => {
        ctx.body = { success: true, media: presentMedia(await findMedia(ctx.state.auth, params.id)) };
      },
    }),
    route({
      method: 'get',
      path: '/media/:id/content',
      summary: 'Download a medium’s content (its Content-Type, Content-Disposition with its name)',
      tags,
      auth: 'v1',
      params: idParams,
      responses: {
        200: { contentType: 'application/octet-stream', description: 'The bytes, with the medium’s Content-Type' },
      },
      handler: async (ctx, { params }) => {
        const { media, content } = await openMedia(deps, ctx.state.auth, params.id);
        const file = { name: media.name, mediaType: media.contentType, size: media.size, content };
        sendFile(ctx, file, 'private, no-store');
      },
    }),
    route({
      method: 'delete',
      path: '/media/:id',
      summary: 'Delete a medium (its file and record); the uploader or an owner/admin',
      tags,
      auth: 'v1',
      params: idParams,
      responses: { 200: successMessage },
      handler: async (ctx, { params }) => {
        await deleteMedia(deps, ctx.state.auth, params.id);
        ctx.body = { success: true, message: 'Media deleted successfully' };
      },
    }),
  ];
}
