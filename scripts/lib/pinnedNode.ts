/**
 * The Node that runs the service's processes: the pinned one, what the production image runs (the Dockerfile's
 * NODE_IMAGE; its version in .nvmrc), wherever they are started — `npm run dev`, `npm start` from a checkout, the
 * benchmarks' stack, CI (.ci/run) — so that what runs and is measured is what ships [docs/decisions.md "The service
 * on the image's Node everywhere"]. The node running the launcher only runs the launcher: when it is the pinned
 * major already its own binary is used, otherwise scripts/pinned-node.sh installs the pinned version into the
 * per-user cache on first use (`npm run servers` does it ahead). When that fails (the registry unreachable) the
 * launcher's own node runs them, with one warning line. Without .nvmrc (the production image: it is not copied there,
 * and the image's node is the pinned one) the launcher's own node runs them.
 */
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { projectRoot } from '../servers/paths';

/** The node running this launcher. */
export interface RunningNode {
  /** `process.version`: `v24.19.0`. */
  version: string;
  /** `process.execPath`. */
  execPath: string;
}

/** What runs the service processes: a binary at hand, or the pinned version to be installed. */
export type NodeChoice = { use: string } | { install: string };

/**
 * @param root the project root.
 * @returns the pinned version (`24.19.0`, from .nvmrc), or undefined when there is no .nvmrc (the production image).
 */
export function pinnedNodeVersion(root: string = projectRoot()): string | undefined {
  const file = path.join(root, '.nvmrc');
  if (!existsSync(file)) return undefined;
  const version = readFileSync(file, 'utf8').trim();
  if (!/^\d+\.\d+\.\d+$/.test(version))
    throw new Error(`.nvmrc must hold an exact version such as 24.19.0: ${version}`);
  return version;
}

const majorOf = (version: string): string => version.replace(/^v/, '').split('.')[0];

/**
 * The pure choice: the running node when it is the pinned major (or nothing is pinned), else the pinned version.
 * @param running the launcher's node.
 * @param pinned the pinned version, if any.
 */
export function chooseNode(running: RunningNode, pinned: string | undefined): NodeChoice {
  return pinned === undefined || majorOf(running.version) === majorOf(pinned)
    ? { use: running.execPath }
    : { install: pinned };
}

/**
 * Runs scripts/pinned-node.sh --exact: the cached pinned Node, installed on first use.
 * @returns its `node` binary.
 * @throws with the script's reason when it could not be installed.
 */
function installPinned(root: string, env: NodeJS.ProcessEnv, say: (line: string) => void): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn('bash', [path.join(root, 'scripts', 'pinned-node.sh'), '--exact'], {
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    const problems: string[] = [];
    child.stdout.on('data', (d: Buffer) => (out += d.toString('utf8')));
    child.stderr.on('data', (d: Buffer) => {
      const lines = (err + d.toString('utf8')).split('\n');
      err = lines.pop() ?? '';
      // Progress ("installing Node …") as it comes; the reason of a failure goes into the one warning line.
      for (const line of lines.filter(Boolean)) {
        if (line.startsWith('installing ') && !line.includes(' failed: ')) say(line);
        else problems.push(line);
      }
    });
    child.once('error', reject);
    child.once('close', (code) => {
      if (err) problems.push(err);
      const bin = out.trim().split('\n').pop() ?? '';
      const node = path.join(bin, 'node');
      if (code === 0 && bin && existsSync(node)) resolve(node);
      else reject(new Error(problems.join('; ') || `scripts/pinned-node.sh exited with ${code}`));
    });
  });
}

export interface ServiceNodeOptions {
  /** Progress and the fallback's warning, one line each. */
  say: (line: string) => void;
  /** The environment of the install (its HOME / XDG_CACHE_HOME, the npm registry). @default process.env */
  env?: NodeJS.ProcessEnv;
  /** @default this process's node */
  running?: RunningNode;
  /** @default the project root (its .nvmrc and scripts/pinned-node.sh) */
  root?: string;
}

/**
 * @returns the node binary to run the service processes with, and its version.
 * Never fails: when the pinned Node cannot be installed it says why in one line and returns the running node.
 */
export async function serviceNode(options: ServiceNodeOptions): Promise<{ path: string; version: string }> {
  const running = options.running ?? { version: process.version, execPath: process.execPath };
  let pinned: string | undefined;
  try {
    const root = options.root ?? projectRoot();
    pinned = pinnedNodeVersion(root);
    const choice = chooseNode(running, pinned);
    if ('use' in choice) return { path: choice.use, version: running.version };
    return { path: await installPinned(root, options.env ?? process.env, options.say), version: `v${choice.install}` };
  } catch (err) {
    options.say(
      `warning: the pinned Node${pinned ? ` ${pinned}` : ''} is not available (${(err as Error).message}); the service processes run on this node, ${running.version}`
    );
    return { path: running.execPath, version: running.version };
  }
}
