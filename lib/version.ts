/**
 * Build and version metadata, read once: package name and version, the git commit (GIT_COMMIT, else the
 * checkout's .git), when the running code was built (the modification time of this compiled file, or of the
 * source when run through tsx) and when this process started.
 */
import { readFileSync, statSync } from 'node:fs';
import path from 'node:path';

let cached: BuildInfo | undefined;

export interface BuildInfo {
  name: string;
  version: string;
  apiVersions: string;
  gitCommit: string;
  builtAt: string;
  node: string;
  startedAt: string;
}

function readFirst(paths: string[]): { file: string; text: string } | undefined {
  for (const file of paths) {
    try {
      return { file, text: readFileSync(file, 'utf8') };
    } catch {
      // try the next
    }
  }
  return undefined;
}

/**
 * @param root the project root.
 * @returns the git directory of its checkout (`.git`, or the directory a worktree's `.git` file names) and the
 * directory holding the refs (a worktree's common directory), or undefined when there is none.
 */
function gitDirsOf(root: string): { gitDir: string; refsDir: string } | undefined {
  const dotGit = path.join(root, '.git');
  const pointer = readFirst([dotGit])?.text; // a worktree: "gitdir: <path>"
  const named = pointer ? /^gitdir: (.+)$/m.exec(pointer)?.[1]?.trim() : undefined;
  if (pointer !== undefined && !named) return undefined;
  const gitDir = named ? path.resolve(root, named) : dotGit;
  const common = readFirst([path.join(gitDir, 'commondir')])?.text.trim();
  return { gitDir, refsDir: common ? path.resolve(gitDir, common) : gitDir };
}

/**
 * @param root the project root.
 * @returns the commit checked out there (also in a git worktree), or undefined when there is no readable .git.
 */
export function gitCommitOf(root: string): string | undefined {
  const dirs = gitDirsOf(root);
  if (!dirs) return undefined;
  const head = readFirst([path.join(dirs.gitDir, 'HEAD')])?.text.trim();
  if (!head) return undefined;
  if (/^[0-9a-f]{40}$/.test(head)) return head;
  const ref = /^ref: (\S+)$/.exec(head)?.[1];
  if (!ref) return undefined;
  const loose = readFirst([path.join(dirs.refsDir, ref), path.join(dirs.gitDir, ref)])?.text.trim();
  if (loose && /^[0-9a-f]{40}$/.test(loose)) return loose;
  const packed = readFirst([path.join(dirs.refsDir, 'packed-refs')])?.text ?? '';
  return packed
    .split('\n')
    .find((l) => l.endsWith(` ${ref}`))
    ?.slice(0, 40);
}

/**
 * @param gitCommit the configured commit (GIT_COMMIT), if any.
 * @returns name, version, commit, build time, node version and start time of this process.
 */
export function buildInfo(gitCommit?: string): BuildInfo {
  if (!cached) {
    // Source (lib/) or compiled (dist/lib/): the project root is one or two levels up.
    const pkg = readFirst([
      path.join(__dirname, '..', 'package.json'),
      path.join(__dirname, '..', '..', 'package.json'),
    ]);
    const meta = pkg ? (JSON.parse(pkg.text) as { name: string; version: string }) : undefined;
    const root = pkg ? path.dirname(pkg.file) : path.join(__dirname, '..');
    cached = {
      name: meta?.name ?? 'agent-automation-service',
      version: meta?.version ?? '0.0.0',
      apiVersions: 'v1,current',
      gitCommit: gitCommit ?? gitCommitOf(root) ?? 'unknown',
      builtAt: statSync(__filename).mtime.toISOString(),
      node: process.version,
      startedAt: new Date().toISOString(),
    };
  }
  return cached;
}
