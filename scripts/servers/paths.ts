/** Project-relative locations used by the provisioning scripts. */
import { existsSync } from 'node:fs';
import path from 'node:path';

/** @returns the directory holding package.json (works from sources and from dist/). */
export function projectRoot(): string {
  let dir = __dirname;
  while (!existsSync(path.join(dir, 'package.json'))) {
    const up = path.dirname(dir);
    if (up === dir) throw new Error('package.json not found above ' + __dirname);
    dir = up;
  }
  return dir;
}

/** @returns `.tools/bin` of the project, where built server binaries are linked. */
export function toolsBinDir(): string {
  return path.join(projectRoot(), '.tools', 'bin');
}
