/**
 * Workspace (space) directories: `<workspacesDir>/<organizationId>/<spaceId>/`. Every path a client names is
 * resolved under that root: no `..`, no NUL, no absolute paths, and symlinks cannot lead outside it.
 */
import { realpath } from 'node:fs/promises';
import path from 'node:path';
import { ValidationError } from './errors';

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
 * Resolves a client-supplied relative path inside a space directory.
 * @param dir the space directory.
 * @param relative the client path (POSIX separators).
 * @returns the absolute path.
 * @throws ValidationError when the path would leave the directory (also through a symlink).
 */
export async function resolveInside(dir: string, relative: string): Promise<string> {
  if (relative.includes('\0') || path.isAbsolute(relative) || relative.split(/[\\/]/).includes('..')) {
    throw new ValidationError('Invalid path: must stay inside the workspace');
  }
  const target = path.resolve(dir, relative);
  if (target !== dir && !target.startsWith(dir + path.sep))
    throw new ValidationError('Invalid path: must stay inside the workspace');
  // Follow symlinks of the longest existing prefix and check again.
  let probe = target;
  for (;;) {
    try {
      const real = await realpath(probe);
      const realDir = await realpath(dir);
      const rest = path.relative(probe, target);
      const full = path.resolve(real, rest);
      if (full !== realDir && !full.startsWith(realDir + path.sep))
        throw new ValidationError('Invalid path: must stay inside the workspace');
      return target;
    } catch (err) {
      if (err instanceof ValidationError) throw err;
      const up = path.dirname(probe);
      if (up === probe) return target;
      probe = up;
    }
  }
}
