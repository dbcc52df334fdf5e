/**
 * Workspace files on the current surface [docs/decisions.md "Workspace files"]: list, read, write, delete, make
 * directories, move, and the file count. Every path is parsed by lib/workspace.ts `parseWorkspacePath` before the
 * storage is called; the storage (lib/fileStorage.ts) is the only thing that touches files.
 */
import type { Readable } from 'node:stream';
import type { AuthContext } from './tokens';
import { findVisibleSpace } from './spaces';
import { NotFoundError, StorageLimitError, ValidationError } from '../lib/errors';
import type { Config } from '../lib/config';
import { WriteLimitExceeded, type FileEntry, type FileStorage, type WorkspaceRef } from '../lib/fileStorage';
import { parseWorkspacePath } from '../lib/workspace';
import { quotaDeps, withWorkspaceReservation, type QuotaDeps } from './workspaceQuota';
import { outsideRequestDeadline } from '../lib/requestDeadline';
import { Space, WorkspaceLink, type SpaceDoc } from '../models';

/** What the file commands need: the storage, the caps and the reservations' lease (lib/config.ts). */
export interface FilesDeps extends QuotaDeps {
  fileMaxBytes: number;
}

/** The configuration the file commands read. */
export type FilesConfig = Pick<
  Config,
  'workspacesDir' | 'workspaceFileMaxBytes' | 'workspaceMaxBytes' | 'workspaceReservationLeaseMs'
>;

/**
 * @param config storage root, caps and lease.
 * @returns what the file commands need: the local-disk storage under WORKSPACES_DIR, the caps and the lease.
 */
export function filesDeps(config: FilesConfig): FilesDeps {
  return { ...quotaDeps(config), fileMaxBytes: config.workspaceFileMaxBytes };
}

const WORKSPACE_NOT_FOUND = 'Workspace not found';

/**
 * A workspace of the caller's organization that the caller can see (private ones: their owner only). Every
 * member who sees a workspace may read and write its files.
 * @param auth the caller.
 * @param id workspace id.
 * @returns the space and its storage reference.
 * @throws NotFoundError `Workspace not found` otherwise (another organization's, public ones included).
 */
export async function findWorkspace(auth: AuthContext, id: string): Promise<{ space: SpaceDoc; ws: WorkspaceRef }> {
  const space = await findVisibleSpace(auth, id).catch((err: unknown) => {
    throw err instanceof NotFoundError ? new NotFoundError(WORKSPACE_NOT_FOUND) : err;
  });
  if (space.organizationId !== auth.organizationId) throw new NotFoundError(WORKSPACE_NOT_FOUND);
  return { space, ws: { organizationId: space.organizationId, spaceId: space._id } };
}

/** Recounts in flight (or queued) per workspace, in this process. */
const recounts = new Map<string, { running: Promise<void>; again: boolean }>();

/**
 * Sets the space's `fileCount` from the storage itself (a count, not `$inc`: it also repairs a count that drifted).
 * Recounts of one workspace in this process run one at a time, and a change made during one is counted by one
 * more run, so the last write always reflects the last change.
 * @param storage the storage.
 * @param ws the workspace.
 */
export async function recountFiles(storage: FileStorage, ws: WorkspaceRef): Promise<void> {
  const current = recounts.get(ws.spaceId);
  if (current) {
    current.again = true;
    return current.running;
  }
  const entry = { running: Promise.resolve(), again: false };
  entry.running = (async () => {
    try {
      do {
        entry.again = false;
        const { files } = await storage.usage(ws);
        await Space.updateOne({ _id: ws.spaceId, organizationId: ws.organizationId }, { $set: { fileCount: files } });
      } while (entry.again);
    } finally {
      recounts.delete(ws.spaceId);
    }
  })();
  recounts.set(ws.spaceId, entry);
  return entry.running;
}

/**
 * @param deps storage and caps.
 * @param auth the caller.
 * @param id workspace id.
 * @param rawPath the directory (`''` or `.` = root).
 * @returns the directory's path and entries.
 */
export async function listFiles(
  deps: FilesDeps,
  auth: AuthContext,
  id: string,
  rawPath: string
): Promise<{ path: string; entries: FileEntry[] }> {
  const rel = parseWorkspacePath(rawPath, { allowRoot: true });
  const { ws } = await findWorkspace(auth, id);
  return { path: rel, entries: await deps.storage.list(ws, rel) };
}

/**
 * @param deps storage.
 * @param auth the caller.
 * @param id workspace id.
 * @param rawPath the file.
 * @returns the file's entry and content.
 */
export async function readFile(
  deps: FilesDeps,
  auth: AuthContext,
  id: string,
  rawPath: string
): Promise<{ entry: FileEntry; content: Readable }> {
  const rel = parseWorkspacePath(rawPath);
  const { ws } = await findWorkspace(auth, id);
  return openFile(deps.storage, ws, rel);
}

/**
 * @param storage the storage.
 * @param ws the workspace.
 * @param rel a parsed path.
 * @returns the file's entry and content (404 when it is not a file).
 */
export async function openFile(
  storage: FileStorage,
  ws: WorkspaceRef,
  rel: string
): Promise<{ entry: FileEntry; content: Readable }> {
  const entry = await storage.stat(ws, rel);
  if (!entry || entry.type !== 'file') throw new NotFoundError('File not found');
  return { entry, content: await storage.read(ws, rel) };
}

/**
 * Creates or replaces a file with the request body, within the per-file and per-workspace caps (413, nothing
 * written). The bytes are reserved before the body is read (commands/workspaceQuota.ts), so concurrent uploads
 * never take the workspace over its cap together.
 * @param deps storage and caps.
 * @param auth the caller.
 * @param id workspace id.
 * @param rawPath the file.
 * @param body the bytes.
 * @param declaredLength Content-Length, when sent (refused at once when over a cap).
 * @returns whether the file was created, and its entry.
 */
export async function writeFile(
  deps: FilesDeps,
  auth: AuthContext,
  id: string,
  rawPath: string,
  body: Readable,
  declaredLength: number | undefined
): Promise<{ created: boolean; entry: FileEntry }> {
  const rel = parseWorkspacePath(rawPath);
  const { ws } = await findWorkspace(auth, id);
  return writeWorkspaceFile(deps, ws, rel, body, declaredLength);
}

/**
 * {@link writeFile} for a workspace already found (agents' file tools write through it too).
 * @param deps storage and caps.
 * @param ws the workspace.
 * @param rel a path parsed by parseWorkspacePath.
 * @param body the bytes.
 * @param declaredLength their length, when known.
 * @returns whether the file was created, and its entry.
 */
export async function writeWorkspaceFile(
  deps: FilesDeps,
  ws: WorkspaceRef,
  rel: string,
  body: Readable,
  declaredLength: number | undefined
): Promise<{ created: boolean; entry: FileEntry }> {
  const fileCap = new StorageLimitError(`File exceeds the limit of ${deps.fileMaxBytes} bytes per file`);
  if (declaredLength !== undefined && declaredLength > deps.fileMaxBytes) throw fileCap;
  const existing = await deps.storage.stat(ws, rel);
  const { created } = await withWorkspaceReservation(
    deps,
    ws,
    {
      // Unknown length: as much as the file may take and the workspace has room for.
      ...(declaredLength === undefined ? { atMost: deps.fileMaxBytes } : { bytes: declaredLength }),
      replaces: existing?.type === 'file' ? existing.size : 0,
    },
    async (reservation) => {
      const max = Math.min(deps.fileMaxBytes, reservation.bytes);
      try {
        // The bytes come at the client's pace (capped in size): the request's deadline does not measure them.
        return await outsideRequestDeadline(() =>
          deps.storage.write(ws, rel, body, max, {
            signal: reservation.signal,
            keepAliveMs: Math.max(Math.floor(deps.reservationLeaseMs / 3), 100),
          })
        );
      } catch (err) {
        if (!(err instanceof WriteLimitExceeded)) throw err;
        if (max === deps.fileMaxBytes) throw fileCap;
        throw new StorageLimitError(
          `The workspace would exceed its limit of ${deps.workspaceMaxBytes} bytes (${reservation.bytes} bytes left)`
        );
      }
    }
  );
  await recountFiles(deps.storage, ws);
  const entry = (await deps.storage.stat(ws, rel))!;
  if (existing?.type === 'file') await followReplacedFile(ws, rel, existing.id, entry.id);
  return { created, entry };
}

/**
 * A file overwritten through the service (an upload over it: a new file on disk) keeps its shares; a file deleted
 * and created again does not (shares are bound to the file's identity) [docs/decisions.md "Security (issue 30)"].
 * @param ws the workspace.
 * @param rel the file's path.
 * @param before its identity before the write.
 * @param after its identity now.
 */
async function followReplacedFile(ws: WorkspaceRef, rel: string, before: string, after: string): Promise<void> {
  if (before === after) return;
  await WorkspaceLink.updateMany(
    { spaceId: ws.spaceId, path: rel, kind: 'share', fileId: before, organizationId: ws.organizationId },
    { $set: { fileId: after } }
  );
}

/**
 * @param deps storage.
 * @param auth the caller.
 * @param id workspace id.
 * @param rawPath file or directory.
 * @param recursive delete a non-empty directory with its content.
 */
export async function deleteFile(
  deps: FilesDeps,
  auth: AuthContext,
  id: string,
  rawPath: string,
  recursive: boolean
): Promise<void> {
  const rel = parseWorkspacePath(rawPath);
  const { ws } = await findWorkspace(auth, id);
  await deps.storage.remove(ws, rel, recursive);
  await recountFiles(deps.storage, ws);
}

/**
 * @param deps storage.
 * @param auth the caller.
 * @param id workspace id.
 * @param rawPath the directory (parents are created).
 * @returns whether it was created, and its entry.
 */
export async function makeDirectory(
  deps: FilesDeps,
  auth: AuthContext,
  id: string,
  rawPath: string
): Promise<{ created: boolean; entry: FileEntry }> {
  const rel = parseWorkspacePath(rawPath);
  const { ws } = await findWorkspace(auth, id);
  const created = await deps.storage.makeDirectory(ws, rel);
  return { created, entry: (await deps.storage.stat(ws, rel))! };
}

/**
 * @param deps storage.
 * @param auth the caller.
 * @param id workspace id.
 * @param move `from`, `to`, and `overwrite` (replace an existing destination).
 * @returns the entry at its new path.
 */
export async function moveFile(
  deps: FilesDeps,
  auth: AuthContext,
  id: string,
  move: { from: string; to: string; overwrite?: boolean }
): Promise<FileEntry> {
  const from = parseWorkspacePath(move.from);
  const to = parseWorkspacePath(move.to);
  const { ws } = await findWorkspace(auth, id);
  await deps.storage.move(ws, from, to, move.overwrite === true);
  await recountFiles(deps.storage, ws);
  const entry = await deps.storage.stat(ws, to);
  if (!entry) throw new ValidationError('The moved entry disappeared');
  return entry;
}
