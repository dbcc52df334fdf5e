/**
 * Workspace (space) paths [docs/decisions.md "Workspace files"]. Directories live at
 * `<workspacesDir>/<organizationId>/<spaceId>/`. Every path a client names goes through
 * {@link parseWorkspacePath} first (the one place the path rules are written), then through the storage's own
 * resolution ({@link resolveInside} on local disk: symlinks cannot lead outside the workspace).
 */
import { lstat, realpath } from 'node:fs/promises';
import path from 'node:path';
import { ValidationError } from './errors';

/** Longest accepted workspace path, in characters. */
export const MAX_PATH_LENGTH = 1024;
/** Longest accepted name of one path segment, in UTF-8 bytes (common file system limit). */
export const MAX_SEGMENT_BYTES = 255;

/**
 * @param root configured workspaces root.
 * @param organizationId owner organization.
 * @param spaceId the space.
 * @returns the absolute directory of the space.
 */
export function spaceDir(root: string, organizationId: string, spaceId: string): string {
  if (!/^[A-Za-z0-9_-]+$/.test(organizationId) || !/^[A-Za-z0-9_-]+$/.test(spaceId)) {
    throw new ValidationError('Invalid space id');
  }
  return path.join(root, organizationId, spaceId);
}

/**
 * Invisible characters that change how a name is shown, refused in file names [docs/decisions.md "Security (issue
 * 30)"]: the bidirectional marks, embeddings, overrides and isolates (U+061C, U+200E–U+200F, U+202A–U+202E,
 * U+2066–U+2069: `report\u202Efdp.exe` shows as `reportexe.pdf`), the line and paragraph separators (U+2028–U+2029),
 * the zero-width space and word joiner (U+200B, U+2060) and the byte order mark (U+FEFF). Zero-width (non-)joiners
 * (U+200C–U+200D) stay: scripts and emoji need them.
 */
const FORMAT_CHARACTERS = /[\u061C\u200B\u200E\u200F\u2028-\u202E\u2060\u2066-\u2069\uFEFF]/;

function invalid(why: string): ValidationError {
  return new ValidationError(`Invalid path: ${why}`);
}

/**
 * The path rules, checked before anything is touched. A workspace path is relative, with `/` separators, after
 * the URL's own (single) decoding. Refused (400): absolute paths (`/x`, `C:x`), `\`, NUL and other control
 * characters (C0, DEL, C1), bidirectional and other invisible format characters ({@link FORMAT_CHARACTERS}), `.`
 * and `..` segments, empty segments (`a//b`, a trailing `/`), a remaining percent escape such as `%2e` or `%2F` (the mark of double encoding), a segment over 255 bytes, a path over 1024 characters.
 * @param raw the client's path.
 * @param options.allowRoot accept `''` or `.` as the workspace root (listing, apps).
 * @returns the normalized relative path (`''` for the root).
 * @throws ValidationError `Invalid path: …`.
 */
export function parseWorkspacePath(raw: string, options: { allowRoot?: boolean } = {}): string {
  if (raw === '' || raw === '.') {
    if (options.allowRoot) return '';
    throw invalid('a file or directory path is required, not the workspace root');
  }
  if (raw.length > MAX_PATH_LENGTH) throw invalid(`longer than ${MAX_PATH_LENGTH} characters`);
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f-\u009f]/.test(raw)) throw invalid('control characters (NUL included) are not allowed');
  if (FORMAT_CHARACTERS.test(raw))
    throw invalid('format characters (U+202E and other direction marks) are not allowed');
  if (raw.includes('\\')) throw invalid('use / as the separator; \\ is not allowed');
  if (/%[0-9A-Fa-f]{2}/.test(raw)) throw invalid('percent escapes are not allowed (the path is decoded once)');
  if (raw.startsWith('/') || /^[A-Za-z]:/.test(raw)) throw invalid('must be relative to the workspace root');
  const segments = raw.split('/');
  for (const segment of segments) {
    if (segment === '..') throw invalid('must stay inside the workspace (.. is not allowed)');
    if (segment === '.' || segment === '') throw invalid('empty and . segments are not allowed');
    if (Buffer.byteLength(segment) > MAX_SEGMENT_BYTES)
      throw invalid(`a name is longer than ${MAX_SEGMENT_BYTES} bytes`);
  }
  return segments.join('/');
}

/**
 * Resolves a parsed workspace path inside a directory on disk, following the symlinks of its longest existing
 * prefix: a path that leads outside the directory through a symlink (or through a dangling one) is refused.
 * @param dir the workspace directory.
 * @param relative a path returned by {@link parseWorkspacePath}.
 * @returns the absolute path.
 * @throws ValidationError when the path would leave the directory.
 */
export async function resolveInside(dir: string, relative: string): Promise<string> {
  const target = path.resolve(dir, relative);
  if (target !== dir && !target.startsWith(dir + path.sep)) throw invalid('must stay inside the workspace');
  const realDir = await realpath(dir).catch(() => dir);
  for (let probe = target; ; probe = path.dirname(probe)) {
    let real: string;
    try {
      real = await realpath(probe);
    } catch {
      // A symbolic link whose target does not exist cannot be checked: refused (writing through it would create
      // its target, wherever that is).
      if ((await lstat(probe).catch(() => undefined))?.isSymbolicLink()) {
        throw invalid('a symbolic link on the path leads nowhere');
      }
      if (probe === dir || path.dirname(probe) === probe) return target;
      continue;
    }
    const full = path.resolve(real, path.relative(probe, target));
    if (full !== realDir && !full.startsWith(realDir + path.sep)) {
      throw invalid('must stay inside the workspace (a symbolic link leads outside it)');
    }
    return target;
  }
}
