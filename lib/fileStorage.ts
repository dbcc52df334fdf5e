/**
 * Workspace files behind one storage interface [docs/decisions.md "Workspace files"]: the commands, the public
 * shares and the apps only ever call {@link FileStorage}. {@link LocalDiskStorage} keeps each workspace in
 * `<workspacesDir>/<organizationId>/<spaceId>/`; an S3-compatible implementation can take its place later (keys
 * under `<organizationId>/<spaceId>/`, directories as prefixes). Paths given to it were parsed by
 * lib/workspace.ts `parseWorkspacePath`; the storage adds its own containment check (symlinks on disk).
 */
import { randomBytes } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { lstat, mkdir, open, readdir, realpath, rename, rm, rmdir, stat, unlink, utimes } from 'node:fs/promises';
import path from 'node:path';
import { Transform, type Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { ConflictError, NotFoundError, ValidationError } from './errors';
import { resolveInside, spaceDir } from './workspace';

/** Which workspace. */
export interface WorkspaceRef {
  organizationId: string;
  spaceId: string;
}

export type FileEntryType = 'file' | 'directory' | 'symlink' | 'other';

export interface FileEntry {
  /** Path relative to the workspace root (`''` for the root). */
  path: string;
  name: string;
  type: FileEntryType;
  /** Bytes (files); 0 otherwise. */
  size: number;
  modifiedAt: Date;
  /**
   * The file's identity in the storage (local disk: device, inode and birth time): a file deleted and re-created
   * at the same path gets another one. Shares are bound to it [docs/decisions.md "Security"].
   */
  id: string;
}

/** Thrown by {@link FileStorage.write} when the body goes over the allowed number of bytes (nothing is kept). */
export class WriteLimitExceeded extends Error {
  constructor(readonly limitBytes: number) {
    super(`write exceeds ${limitBytes} bytes`);
    this.name = 'WriteLimitExceeded';
  }
}

/** What every storage of workspace files offers. Errors: NotFoundError, ConflictError, ValidationError (4xx). */
export interface FileStorage {
  /** @returns the entry at `path` (symlinks not followed), or null when there is none. */
  stat(ws: WorkspaceRef, path: string): Promise<FileEntry | null>;
  /** @returns the entries of a directory, sorted by name (the root of a workspace never written to is empty). */
  list(ws: WorkspaceRef, path: string): Promise<FileEntry[]>;
  /** @returns the content of a file as a stream. */
  read(ws: WorkspaceRef, path: string): Promise<Readable>;
  /** @returns at most `bytes` first bytes of a file. */
  readHead(ws: WorkspaceRef, path: string, bytes: number): Promise<Buffer>;
  /**
   * Creates or replaces a file with the body (parents created), all or nothing.
   * @throws WriteLimitExceeded past `maxBytes` (the old content, if any, is kept); the signal's reason when it is
   * aborted before the file is in place (nothing is kept).
   */
  write(
    ws: WorkspaceRef,
    path: string,
    body: Readable,
    maxBytes: number,
    options?: WriteOptions
  ): Promise<{ created: boolean }>;
  /** Removes a file, or a directory (non-empty ones only with `recursive`). */
  remove(ws: WorkspaceRef, path: string, recursive: boolean): Promise<void>;
  /** Creates a directory and its parents. @returns false when it already existed. */
  makeDirectory(ws: WorkspaceRef, path: string): Promise<boolean>;
  /** Moves a file or directory (parents of the destination created); an existing destination only with `overwrite`. */
  move(ws: WorkspaceRef, from: string, to: string, overwrite: boolean): Promise<void>;
  /**
   * A local file that in-process engines (the data-block queries) may open: on local disk the file itself, with
   * every symlink resolved (its real path, checked inside the workspace). A remote storage would copy it first.
   * @returns the absolute path of a regular file.
   * @throws NotFoundError when there is no file at `path`.
   */
  localPath(ws: WorkspaceRef, path: string): Promise<string>;
  /**
   * @param options.staleTemporaryMs remove the temporary files of writes in progress that were not touched for this
   * long (their write died with its process: a live write touches its file every `keepAliveMs`).
   * @returns the workspace's regular files (outside `.git` directories) and bytes (all files but the temporary files
   * of writes in progress, which their reservations cover: commands/workspaceQuota.ts).
   */
  usage(ws: WorkspaceRef, options?: { staleTemporaryMs?: number }): Promise<{ files: number; bytes: number }>;
  /** @returns whether any part of the path (below the workspace root) is a symbolic link. */
  hasLink(ws: WorkspaceRef, path: string): Promise<boolean>;
}

/** Options of {@link FileStorage.write}. */
export interface WriteOptions {
  /** Aborted: the write stops and keeps nothing (checked last just before the file is put in place). */
  signal?: AbortSignal;
  /** Touch the temporary file this often while writing, so that it is never taken for one a dead write left. */
  keepAliveMs?: number;
}

/** @returns a file's identity from its stat: another file at the same path has another one. */
function identityOf(s: { dev: number; ino: number; birthtimeMs: number; ctimeMs: number }): string {
  // Inode numbers are reused; the birth time (or, where the file system keeps none, the change time) is not.
  return `${s.dev}:${s.ino}:${s.birthtimeMs || s.ctimeMs}`;
}

/**
 * Names of the temporary files uploads write before renaming them (not listed; their bytes are counted by the
 * write's reservation, not by `usage`).
 */
const TEMPORARY = /^\.upload-[0-9a-f]{16}\.tmp$/;

function typeOf(s: { isFile(): boolean; isDirectory(): boolean; isSymbolicLink(): boolean }): FileEntryType {
  if (s.isSymbolicLink()) return 'symlink';
  if (s.isFile()) return 'file';
  if (s.isDirectory()) return 'directory';
  return 'other';
}

function errno(err: unknown): string | undefined {
  return (err as NodeJS.ErrnoException | undefined)?.code;
}

/** A Transform that fails with WriteLimitExceeded once more than `max` bytes went through. */
function byteLimit(max: number): Transform {
  let seen = 0;
  return new Transform({
    transform(chunk: Buffer, _enc, done) {
      seen += chunk.length;
      if (seen > max) done(new WriteLimitExceeded(max));
      else done(null, chunk);
    },
  });
}

/**
 * Copies a body into a new file, failing with WriteLimitExceeded past `max` bytes. The body itself is never
 * destroyed: past the limit it is drained, so that an HTTP request still gets its answer (413) instead of a reset.
 */
export async function copyLimited(body: Readable, file: string, max: number, signal?: AbortSignal): Promise<void> {
  const limit = byteLimit(max);
  const onError = (err: unknown): void => void limit.destroy(err as Error);
  const onClose = (): void => {
    if (!body.readableEnded) limit.destroy(new Error('The request body was cut short'));
  };
  const onAbort = (): void => void limit.destroy(signal!.reason as Error);
  body.once('error', onError);
  body.once('close', onClose);
  signal?.addEventListener('abort', onAbort);
  body.pipe(limit);
  try {
    signal?.throwIfAborted();
    await pipeline(limit, createWriteStream(file, { flags: 'wx' }));
  } catch (err) {
    body.unpipe(limit);
    body.resume();
    throw err;
  } finally {
    body.off('error', onError);
    body.off('close', onClose);
    signal?.removeEventListener('abort', onAbort);
  }
}

/** Workspaces on the local disk under the configured root. */
export class LocalDiskStorage implements FileStorage {
  constructor(private readonly root: string) {}

  private dir(ws: WorkspaceRef): string {
    return spaceDir(this.root, ws.organizationId, ws.spaceId);
  }

  private async resolve(ws: WorkspaceRef, rel: string): Promise<string> {
    return resolveInside(this.dir(ws), rel);
  }

  async stat(ws: WorkspaceRef, rel: string): Promise<FileEntry | null> {
    const abs = await this.resolve(ws, rel);
    const s = await lstat(abs).catch(() => null);
    if (!s) return null;
    const type = typeOf(s);
    // A symlink inside the workspace (resolve checked where it leads) is reported as what it points to.
    const seen = type === 'symlink' ? await stat(abs).catch(() => s) : s;
    return {
      path: rel,
      name: path.posix.basename(rel),
      type: typeOf(seen),
      size: seen.isFile() ? seen.size : 0,
      modifiedAt: seen.mtime,
      id: identityOf(seen),
    };
  }

  async list(ws: WorkspaceRef, rel: string): Promise<FileEntry[]> {
    const abs = await this.resolve(ws, rel);
    let names: string[];
    try {
      names = await readdir(abs);
    } catch (err) {
      if (rel === '' && errno(err) === 'ENOENT') return [];
      if (errno(err) === 'ENOENT') throw new NotFoundError('Directory not found');
      if (errno(err) === 'ENOTDIR') throw new ValidationError('Path is a file, not a directory');
      throw err;
    }
    const entries: FileEntry[] = [];
    for (const name of names.sort()) {
      if (TEMPORARY.test(name)) continue; // an upload in progress
      const s = await lstat(path.join(abs, name)).catch(() => null);
      if (!s) continue;
      entries.push({
        path: rel === '' ? name : `${rel}/${name}`,
        name,
        type: typeOf(s),
        size: s.isFile() ? s.size : 0,
        modifiedAt: s.mtime,
        id: identityOf(s),
      });
    }
    return entries;
  }

  private async fileAt(ws: WorkspaceRef, rel: string): Promise<string> {
    const abs = await this.resolve(ws, rel);
    const s = await stat(abs).catch(() => null);
    if (!s) throw new NotFoundError('File not found');
    if (!s.isFile()) throw new ValidationError('Path is not a file');
    return abs;
  }

  async read(ws: WorkspaceRef, rel: string): Promise<Readable> {
    return createReadStream(await this.fileAt(ws, rel));
  }

  async readHead(ws: WorkspaceRef, rel: string, bytes: number): Promise<Buffer> {
    const handle = await open(await this.fileAt(ws, rel), 'r');
    try {
      const buf = Buffer.alloc(bytes);
      const { bytesRead } = await handle.read(buf, 0, bytes, 0);
      return buf.subarray(0, bytesRead);
    } finally {
      await handle.close();
    }
  }

  async write(
    ws: WorkspaceRef,
    rel: string,
    body: Readable,
    maxBytes: number,
    options: WriteOptions = {}
  ): Promise<{ created: boolean }> {
    const abs = await this.resolve(ws, rel);
    const existing = await lstat(abs).catch(() => null);
    if (existing?.isDirectory()) throw new ConflictError('A directory exists at this path');
    await this.makeParents(ws, rel);
    // Written beside the target, then renamed over it: readers never see half a file, and a symlink at the target
    // is replaced rather than followed.
    const temp = path.join(path.dirname(abs), `.upload-${randomBytes(8).toString('hex')}.tmp`); // TEMPORARY
    const touch = options.keepAliveMs
      ? setInterval(() => {
          const now = new Date();
          void utimes(temp, now, now).catch(() => undefined);
        }, options.keepAliveMs)
      : undefined;
    try {
      await copyLimited(body, temp, maxBytes, options.signal);
      options.signal?.throwIfAborted();
      await rename(temp, abs);
    } catch (err) {
      await unlink(temp).catch(() => undefined);
      throw err;
    } finally {
      clearInterval(touch);
    }
    return { created: !existing };
  }

  private async makeParents(ws: WorkspaceRef, rel: string): Promise<void> {
    const parent = path.posix.dirname(rel);
    await mkdir(this.dir(ws), { recursive: true });
    if (parent === '.') return;
    try {
      await mkdir(await this.resolve(ws, parent), { recursive: true });
    } catch (err) {
      if (errno(err) === 'EEXIST' || errno(err) === 'ENOTDIR')
        throw new ConflictError('A parent of the path is a file');
      throw err;
    }
  }

  async remove(ws: WorkspaceRef, rel: string, recursive: boolean): Promise<void> {
    const abs = await this.resolve(ws, rel);
    const s = await lstat(abs).catch(() => null);
    if (!s) throw new NotFoundError('File not found');
    if (!s.isDirectory()) return unlink(abs);
    if (recursive) return rm(abs, { recursive: true });
    try {
      await rmdir(abs);
    } catch (err) {
      if (errno(err) === 'ENOTEMPTY' || errno(err) === 'EEXIST')
        throw new ConflictError('Directory is not empty (set recursive to delete it with its content)');
      throw err;
    }
  }

  async makeDirectory(ws: WorkspaceRef, rel: string): Promise<boolean> {
    const abs = await this.resolve(ws, rel);
    const s = await lstat(abs).catch(() => null);
    if (s?.isDirectory()) return false;
    if (s) throw new ConflictError('A file exists at this path');
    await this.makeParents(ws, rel);
    try {
      await mkdir(abs);
    } catch (err) {
      if (errno(err) === 'EEXIST') return false;
      throw err;
    }
    return true;
  }

  async move(ws: WorkspaceRef, from: string, to: string, overwrite: boolean): Promise<void> {
    const src = await this.resolve(ws, from);
    const dest = await this.resolve(ws, to);
    const s = await lstat(src).catch(() => null);
    if (!s) throw new NotFoundError('Source not found');
    if (src === dest) return;
    if (dest.startsWith(src + path.sep)) throw new ValidationError('A directory cannot be moved inside itself');
    const d = await lstat(dest).catch(() => null);
    if (d && !overwrite) throw new ConflictError('The destination exists (set overwrite to replace it)');
    if (d && d.isDirectory() !== s.isDirectory())
      throw new ConflictError('The destination is of another kind (a file and a directory)');
    await this.makeParents(ws, to);
    try {
      await rename(src, dest);
    } catch (err) {
      if (errno(err) === 'ENOTEMPTY' || errno(err) === 'EEXIST')
        throw new ConflictError('The destination directory is not empty');
      throw err;
    }
  }

  async localPath(ws: WorkspaceRef, rel: string): Promise<string> {
    return realpath(await this.fileAt(ws, rel));
  }

  async hasLink(ws: WorkspaceRef, rel: string): Promise<boolean> {
    const dir = this.dir(ws);
    let at = dir;
    for (const segment of rel.split('/').filter(Boolean)) {
      at = path.join(at, segment);
      const s = await lstat(at).catch(() => null);
      if (!s) return false;
      if (s.isSymbolicLink()) return true;
    }
    return false;
  }

  async usage(
    ws: WorkspaceRef,
    options: { staleTemporaryMs?: number } = {}
  ): Promise<{ files: number; bytes: number }> {
    let files = 0;
    let bytes = 0;
    const staleBefore = options.staleTemporaryMs === undefined ? undefined : Date.now() - options.staleTemporaryMs;
    const walk = async (dir: string, inGit: boolean): Promise<void> => {
      const entries = await readdir(dir, { withFileTypes: true }).catch(() => []);
      for (const e of entries) {
        const abs = path.join(dir, e.name);
        if (e.isDirectory()) await walk(abs, inGit || e.name === '.git');
        else if (e.isFile() && TEMPORARY.test(e.name)) {
          const s = await lstat(abs).catch(() => null);
          if (s && staleBefore !== undefined && s.mtimeMs < staleBefore) await unlink(abs).catch(() => undefined);
        } else if (e.isFile()) {
          bytes += (await lstat(abs).catch(() => ({ size: 0 }))).size;
          if (!inGit) files += 1;
        }
      }
    };
    await walk(this.dir(ws), false);
    return { files, bytes };
  }
}
