/**
 * Public links into a workspace [docs/decisions.md "Shares and apps"]: file shares and workspace apps. Each has
 * an unguessable token (40 base62 characters, ~238 bits) shown once in its URL; only its SHA-256 is stored. The
 * public routes find a link by that hash; an unknown token is 404, a revoked or expired link 410.
 */
import type { Readable } from 'node:stream';
import type { AuthContext } from './tokens';
import { findWorkspace, openFile, type FilesDeps } from './workspaceFiles';
import { sha256Hex } from '../lib/crypto';
import { GoneError, NotFoundError, ValidationError } from '../lib/errors';
import type { FileEntry, WorkspaceRef } from '../lib/fileStorage';
import { newId, randomBase62 } from '../lib/ids';
import { parseWorkspacePath } from '../lib/workspace';
import { Space, WorkspaceLink, type LinkKind, type WorkspaceLinkDoc } from '../models';

/** Shares expire after this long unless asked otherwise, and at most after SHARE_MAX_SECONDS. */
export const SHARE_DEFAULT_SECONDS = 7 * 24 * 3600;
export const SHARE_MAX_SECONDS = 90 * 24 * 3600;

/** Public paths of links (under the current surface's `/api`). */
export const LINK_PATHS: Record<LinkKind, (token: string) => string> = {
  share: (token) => `/api/shares/${token}`,
  app: (token) => `/api/apps/${token}/`,
};

/** A link and its public URL (the only time the URL can be read: the token is not stored). */
export interface CreatedLink {
  link: WorkspaceLinkDoc;
  url: string;
}

async function createLink(
  auth: AuthContext,
  ws: WorkspaceRef,
  fields: { kind: LinkKind; path: string; name?: string; expiresAt: Date | null; fileId?: string },
  appUrl: string
): Promise<CreatedLink> {
  const token = randomBase62(40);
  const created = await WorkspaceLink.create({
    _id: newId(fields.kind === 'share' ? 'shr' : 'app'),
    ...fields,
    organizationId: ws.organizationId,
    spaceId: ws.spaceId,
    tokenHash: sha256Hex(token),
    createdBy: auth.userId,
  });
  return {
    link: created.toObject() as WorkspaceLinkDoc,
    url: `${appUrl.replace(/\/+$/, '')}${LINK_PATHS[fields.kind](token)}`,
  };
}

/**
 * @param deps storage.
 * @param auth the caller.
 * @param id workspace id.
 * @param input the file and how long the share lives.
 * @param appUrl public base address.
 * @returns the share and its URL.
 */
export async function createShare(
  deps: FilesDeps,
  auth: AuthContext,
  id: string,
  input: { path: string; expires_in_seconds?: number },
  appUrl: string
): Promise<CreatedLink> {
  const rel = parseWorkspacePath(input.path);
  const { ws } = await findWorkspace(auth, id);
  const entry = await deps.storage.stat(ws, rel);
  if (!entry) throw new NotFoundError('File not found');
  if (entry.type !== 'file') throw new ValidationError('Only files can be shared');
  const seconds = input.expires_in_seconds ?? SHARE_DEFAULT_SECONDS;
  const expiresAt = new Date(Date.now() + seconds * 1000);
  return createLink(auth, ws, { kind: 'share', path: rel, expiresAt, fileId: entry.id }, appUrl);
}

/** @returns whether a parsed path names a hidden file or folder (a segment starting with `.`: `.env`, `.git/…`). */
const isHidden = (rel: string): boolean => rel.split('/').some((segment) => segment.startsWith('.'));

/**
 * Defines a workspace app: a static site served from a folder of the workspace; never its root, nor a hidden
 * folder, nor through a symbolic link [docs/decisions.md "Security"].
 * @param deps storage.
 * @param auth the caller.
 * @param id workspace id.
 * @param input name and folder.
 * @param appUrl public base address.
 * @returns the app and its URL.
 */
export async function createApp(
  deps: FilesDeps,
  auth: AuthContext,
  id: string,
  input: { name: string; path: string },
  appUrl: string
): Promise<CreatedLink> {
  const rel = parseWorkspacePath(input.path);
  if (isHidden(rel)) throw new ValidationError('Invalid path: an app cannot serve a hidden folder');
  const { ws } = await findWorkspace(auth, id);
  const entry = await deps.storage.stat(ws, rel);
  if (!entry) throw new NotFoundError('Directory not found');
  if (entry.type !== 'directory') throw new ValidationError('An app is served from a directory');
  if (await deps.storage.hasLink(ws, rel))
    throw new ValidationError('Invalid path: an app cannot be served through a symbolic link');
  return createLink(auth, ws, { kind: 'app', path: rel, name: input.name, expiresAt: null }, appUrl);
}

/**
 * Revokes a share or an app of the workspace (idempotent: revoking twice keeps the first time).
 * @param auth the caller.
 * @param id workspace id.
 * @param linkId `shr_…` or `app_…`.
 * @returns the link.
 */
export async function revokeLink(auth: AuthContext, id: string, linkId: string): Promise<WorkspaceLinkDoc> {
  const { ws } = await findWorkspace(auth, id);
  const filter = { _id: linkId, organizationId: ws.organizationId, spaceId: ws.spaceId };
  const link = await WorkspaceLink.findOne(filter).lean<WorkspaceLinkDoc>();
  if (!link) throw new NotFoundError('Share not found');
  if (link.revokedAt) return link;
  const revokedAt = new Date();
  await WorkspaceLink.updateOne({ ...filter, revokedAt: null }, { $set: { revokedAt } });
  return { ...link, revokedAt };
}

/**
 * @param token the token from a public URL.
 * @param kind which kind of link the route serves.
 * @returns the live link and its workspace.
 * @throws NotFoundError for an unknown token or a deleted workspace; GoneError when revoked or expired.
 */
export async function resolveLink(
  token: string,
  kind: LinkKind
): Promise<{ link: WorkspaceLinkDoc; ws: WorkspaceRef }> {
  const what = kind === 'share' ? 'Share' : 'App';
  const link = /^[A-Za-z0-9]{40}$/.test(token)
    ? await WorkspaceLink.findOne({ tokenHash: sha256Hex(token) }).lean<WorkspaceLinkDoc>()
    : null;
  if (!link || link.kind !== kind) throw new NotFoundError(`${what} not found`);
  if (link.revokedAt) throw new GoneError(`This ${what.toLowerCase()} was revoked`);
  if (link.expiresAt && link.expiresAt.getTime() <= Date.now())
    throw new GoneError(`This ${what.toLowerCase()} has expired`);
  const space = await Space.findOne({ _id: link.spaceId, organizationId: link.organizationId })
    .select({ deletedAt: 1 })
    .lean<{ deletedAt: Date | null }>();
  if (!space || space.deletedAt) throw new NotFoundError(`${what} not found`);
  return { link, ws: { organizationId: link.organizationId, spaceId: link.spaceId } };
}

/**
 * @param deps storage.
 * @param token the share's token.
 * @returns the shared file (404 when it no longer exists at its path).
 */
export async function openSharedFile(deps: FilesDeps, token: string): Promise<{ entry: FileEntry; content: Readable }> {
  const { link, ws } = await resolveLink(token, 'share');
  const file = await openFile(deps.storage, ws, link.path);
  // Bound to the file shared, not to its path: another file at that path (deleted and re-created) is not served.
  if (link.fileId && file.entry.id !== link.fileId) {
    file.content.destroy();
    throw new NotFoundError('File not found');
  }
  return file;
}

/**
 * The file an app serves for a request path: the path itself, or its `index.html` when it names a directory
 * (never a listing). A directory asked for without its trailing slash is answered `{ redirect: true }` instead,
 * so that the page's relative links resolve inside it.
 * @param deps storage.
 * @param token the app's token.
 * @param rawPath the path after the app's URL (`''` for its root), decoded once.
 * @param trailingSlash whether the request's path ends with `/`.
 * @returns the file, or a redirect.
 */
export async function openAppFile(
  deps: FilesDeps,
  token: string,
  rawPath: string,
  trailingSlash: boolean
): Promise<{ entry: FileEntry; content: Readable } | { redirect: true }> {
  const trimmed = rawPath.endsWith('/') ? rawPath.slice(0, -1) : rawPath;
  const inner = parseWorkspacePath(trimmed, { allowRoot: true });
  const { link, ws } = await resolveLink(token, 'app');
  if (link.path === '')
    throw new GoneError('This app published the workspace root, which apps no longer do: create it on a folder');
  const notFound = new NotFoundError('Not found');
  // Only the app's own folder: never a hidden file or folder (.env, .git), never through a symbolic link.
  if (isHidden(inner)) throw notFound;
  let rel = [link.path, inner].filter(Boolean).join('/');
  if (await deps.storage.hasLink(ws, rel)) throw notFound;
  const entry = await deps.storage.stat(ws, rel);
  if (entry?.type === 'directory') {
    if (!trailingSlash) return { redirect: true };
    rel = `${rel}/index.html`;
    if (await deps.storage.hasLink(ws, rel)) throw notFound;
  }
  return openFile(deps.storage, ws, rel).catch((err: unknown) => {
    throw err instanceof NotFoundError ? notFound : err;
  });
}
