/**
 * Workspace files, shares and apps on the current surface [docs/decisions.md "Workspace files", "Previews",
 * "Shares and apps"]. Paths are the `path` query parameter (reads, uploads, deletes, listings) or body fields
 * (directory, move, preview, share, apps); the public routes serve a share's file and an app's files by token.
 * Schemas: workspaceFiles.schema.ts; the public JSON: presenters/workspaceFile.ts.
 */
import type { Readable } from 'node:stream';
import { previewFile } from '../../commands/filePreview';
import {
  deleteFile,
  filesDeps,
  listFiles,
  makeDirectory,
  moveFile,
  readFile,
  writeFile,
  type FilesDeps,
} from '../../commands/workspaceFiles';
import { createApp, createShare, openAppFile, openSharedFile, revokeLink } from '../../commands/workspaceLinks';
import type { Config } from '../../lib/config';
import { contentTypeHeader, mediaTypeOf } from '../../lib/contentTypes';
import { UnsupportedContentEncodingError } from '../../lib/errors';
import type { FileEntry } from '../../lib/fileStorage';
import { presentEntry, presentLink, presentPreview } from '../../presenters/workspaceFile';
import type { AppContext } from '../context';
import { sendFile } from '../download';
import { route, type RouteSpec } from '../route';
import { idParams } from '../schemas';
import {
  appBody,
  appFileParams,
  appResponse,
  binary,
  deletedResponse,
  deleteQuery,
  directoryBody,
  directoryResponse,
  fileQuery,
  fileResponse,
  linkParams,
  listingQuery,
  listingResponse,
  moveBody,
  previewBody,
  previewResponse,
  revokedResponse,
  shareBody,
  shareResponse,
  tokenParams,
} from './workspaceFiles.schema';

const tags = ['Workspace files'];

/** Answers a workspace file (read, share): its type from its name (api/download.ts). */
function sendWorkspaceFile(ctx: AppContext, file: { entry: FileEntry; content: Readable }, cache: string): void {
  const { name, size } = file.entry;
  sendFile(ctx, { name, size, mediaType: mediaTypeOf(name), content: file.content }, cache);
}

/**
 * The policy of an app's pages: resources from the app's own URL only, and a sandbox (an opaque origin: an app
 * cannot read or act as the service's origin). App answers carry `Access-Control-Allow-Origin: *` so that the
 * sandboxed page can load its own module scripts and data (they are public at that URL anyway).
 */
function appCsp(appBase: string): string {
  const self = appBase;
  return [
    "default-src 'none'",
    `script-src ${self}`,
    `style-src ${self} 'unsafe-inline'`,
    `img-src ${self} data:`,
    `font-src ${self}`,
    `media-src ${self}`,
    `connect-src ${self}`,
    `manifest-src ${self}`,
    "object-src 'none'",
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
    'sandbox allow-scripts allow-popups allow-downloads',
  ].join('; ');
}

/**
 * @param config storage root, caps and public address.
 * @returns the route declarations.
 */
export function workspaceFileRoutes(config: Readonly<Config>): RouteSpec[] {
  const deps = filesDeps(config);
  const base = config.appUrl.replace(/\/+$/, '');
  return [
    route({
      method: 'get',
      path: '/workspaces/:id/files',
      summary: 'List a directory of the workspace (`path`, default the root)',
      tags,
      auth: 'service',
      scope: 'workspaces:read',
      params: idParams,
      query: listingQuery,
      responses: { 200: listingResponse },
      handler: async (ctx, { params, query }) => {
        const listing = await listFiles(deps, ctx.state.auth, params.id, query.path ?? '');
        ctx.body = { path: listing.path, entries: listing.entries.map(presentEntry) };
      },
    }),
    route({
      method: 'get',
      path: '/workspaces/:id/files/content',
      summary: 'Read a file of the workspace (its bytes)',
      tags,
      auth: 'service',
      scope: 'workspaces:read',
      params: idParams,
      query: fileQuery,
      responses: { 200: binary('The file, with its Content-Type and Content-Disposition') },
      handler: async (ctx, { params, query }) => {
        sendWorkspaceFile(ctx, await readFile(deps, ctx.state.auth, params.id, query.path), 'private, no-store');
      },
    }),
    route({
      method: 'put',
      path: '/workspaces/:id/files/content',
      summary: 'Write (upload) a file: the body is its bytes; parents are created, an existing file replaced',
      tags,
      auth: 'service',
      scope: 'workspaces:write',
      params: idParams,
      query: fileQuery,
      rawBody: { contentType: 'application/octet-stream', description: "The file's bytes (any Content-Type)" },
      responses: { 200: fileResponse, 201: fileResponse },
      errors: [409],
      handler: async (ctx, { params, query }) => {
        const coding = ctx.get('content-encoding').trim().toLowerCase();
        if (coding !== '' && coding !== 'identity')
          throw new UnsupportedContentEncodingError('Uploads take no Content-Encoding: send the bytes as they are');
        const length = ctx.get('content-length');
        const declared = length === '' ? undefined : Number(length);
        const done = await writeFile(deps, ctx.state.auth, params.id, query.path, ctx.req, declared);
        ctx.status = done.created ? 201 : 200;
        ctx.body = { file: presentEntry(done.entry) };
      },
    }),
    route({
      method: 'delete',
      path: '/workspaces/:id/files',
      summary: 'Delete a file or a directory (a non-empty directory only with `recursive=true`)',
      tags,
      auth: 'service',
      scope: 'workspaces:write',
      params: idParams,
      query: deleteQuery,
      responses: { 200: deletedResponse },
      errors: [409],
      handler: async (ctx, { params, query }) => {
        await deleteFile(deps, ctx.state.auth, params.id, query.path, query.recursive);
        ctx.body = { deleted: true, path: query.path };
      },
    }),
    route({
      method: 'post',
      path: '/workspaces/:id/files/directory',
      summary: 'Create a directory (and its parents); 200 when it already exists',
      tags,
      auth: 'service',
      scope: 'workspaces:write',
      params: idParams,
      body: directoryBody,
      responses: { 200: directoryResponse, 201: directoryResponse },
      errors: [409],
      handler: async (ctx, { params, body }) => {
        const done = await makeDirectory(deps, ctx.state.auth, params.id, body.path);
        ctx.status = done.created ? 201 : 200;
        ctx.body = { created: done.created, directory: presentEntry(done.entry) };
      },
    }),
    route({
      method: 'post',
      path: '/workspaces/:id/files/move',
      summary: 'Move or rename a file or directory (an existing destination only with `overwrite`)',
      tags,
      auth: 'service',
      scope: 'workspaces:write',
      params: idParams,
      body: moveBody,
      responses: { 200: fileResponse },
      errors: [409],
      handler: async (ctx, { params, body }) => {
        ctx.body = { file: presentEntry(await moveFile(deps, ctx.state.auth, params.id, body)) };
      },
    }),
    route({
      method: 'post',
      path: '/workspaces/:id/files/preview',
      summary: 'Preview a file: text with its detected type, image dimensions and thumbnail, or metadata',
      tags,
      auth: 'service',
      scope: 'workspaces:read',
      params: idParams,
      body: previewBody,
      responses: { 200: previewResponse },
      handler: async (ctx, { params, body }) => {
        const preview = await previewFile(deps, ctx.state.auth, params.id, body.path, body.max_bytes);
        ctx.body = { preview: presentPreview(preview) };
      },
    }),
    route({
      method: 'post',
      path: '/workspaces/:id/files/share',
      summary: 'Share a file at a public, expiring URL (shown once; revoke with DELETE …/shares/{shareId})',
      tags,
      auth: 'service',
      scope: 'workspaces:write',
      params: idParams,
      body: shareBody,
      responses: { 201: shareResponse },
      handler: async (ctx, { params, body }) => {
        const created = await createShare(deps, ctx.state.auth, params.id, body, base);
        ctx.status = 201;
        ctx.body = { share: presentLink(created) };
      },
    }),
    route({
      method: 'delete',
      path: '/workspaces/:id/shares/:shareId',
      summary: 'Revoke a file share or an app (its URL then answers 410)',
      tags,
      auth: 'service',
      scope: 'workspaces:write',
      params: linkParams,
      responses: { 200: revokedResponse },
      handler: async (ctx, { params }) => {
        const link = await revokeLink(ctx.state.auth, params.id, params.shareId);
        ctx.body = { id: link._id, revoked_at: link.revokedAt!.toISOString() };
      },
    }),
    route({
      method: 'post',
      path: '/workspaces/:id/apps',
      summary: 'Create a workspace app: a static site served from a folder at a public URL with its own token',
      tags,
      auth: 'service',
      scope: 'workspaces:write',
      params: idParams,
      body: appBody,
      responses: { 201: appResponse },
      handler: async (ctx, { params, body }) => {
        const created = await createApp(deps, ctx.state.auth, params.id, body, base);
        ctx.status = 201;
        ctx.body = { app: presentLink(created) };
      },
    }),
    route({
      method: 'get',
      path: '/shares/:token',
      summary: 'A shared file (public; 410 once expired or revoked)',
      tags,
      auth: 'public',
      params: tokenParams,
      responses: { 200: binary('The file, with its Content-Type and Content-Disposition') },
      errors: [410],
      handler: async (ctx, { params }) => {
        sendWorkspaceFile(ctx, await openSharedFile(deps, params.token), 'private, no-store');
      },
    }),
    route({
      method: 'get',
      path: '/apps/:token',
      summary: 'A workspace app’s home page (public; redirects to the URL with a trailing slash)',
      tags,
      auth: 'public',
      params: tokenParams,
      responses: {
        200: { contentType: 'text/html', description: 'The app folder’s index.html' },
        308: { contentType: 'text/plain', description: 'To the same URL with a trailing slash' },
      },
      errors: [410],
      handler: async (ctx, { params }) => serveApp(ctx, deps, base, params.token, ''),
    }),
    route({
      method: 'get',
      path: '/apps/:token/*path',
      summary: 'A file of a workspace app (public; a folder serves its index.html, never a listing)',
      tags,
      auth: 'public',
      params: appFileParams,
      responses: {
        200: binary('The file, with its Content-Type and the app’s Content-Security-Policy'),
        308: { contentType: 'text/plain', description: 'A folder asked for without its trailing slash: to it' },
      },
      errors: [410],
      handler: async (ctx, { params }) => {
        const { token, path } = params;
        await serveApp(ctx, deps, base, token, path);
      },
    }),
  ];
}

async function serveApp(ctx: AppContext, deps: FilesDeps, base: string, token: string, path: string): Promise<void> {
  const file = await openAppFile(deps, token, path, ctx.path.endsWith('/'));
  if ('redirect' in file) {
    ctx.status = 308;
    ctx.redirect(`${ctx.path}/${ctx.querystring ? `?${ctx.querystring}` : ''}`);
    return;
  }
  const media = mediaTypeOf(file.entry.name);
  ctx.status = 200;
  ctx.type = contentTypeHeader(media);
  ctx.length = file.entry.size;
  ctx.set('X-Content-Type-Options', 'nosniff');
  // The app's own URL as the browser asked for it (a source with a path: only the app's files match).
  const origin = ctx.host ? `${ctx.protocol}://${ctx.host}` : base;
  ctx.set('Content-Security-Policy', appCsp(`${origin}/api/apps/${token}/`));
  ctx.set('Access-Control-Allow-Origin', '*');
  ctx.set('Cache-Control', 'no-cache');
  ctx.body = file.content;
}
