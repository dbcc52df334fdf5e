/**
 * Runs the project's own entrypoints (api, worker, admin CLI) as child processes, as an operator would.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import path from 'node:path';

export const ROOT = path.resolve(__dirname, '..', '..');
/** `node --import tsx <file>`: one process per entrypoint, so signals reach its handlers directly. */
const NODE_TSX = [process.execPath, '--import', 'tsx'] as const;

/**
 * Runs a TypeScript entrypoint to completion.
 * @param script path relative to the project root.
 * @param args arguments.
 * @param env environment.
 * @returns exit status, stdout and stderr.
 */
export function runScript(
  script: string,
  args: string[],
  env: NodeJS.ProcessEnv
): { status: number | null; stdout: string; stderr: string } {
  const res = spawnSync(NODE_TSX[0], [...NODE_TSX.slice(1), script, ...args], {
    cwd: ROOT,
    env,
    encoding: 'utf8',
    timeout: 60_000,
  });
  return { status: res.status, stdout: res.stdout, stderr: res.stderr };
}

export interface Spawned {
  child: ChildProcess;
  /** SIGKILLs the process and anything it started (its own process group), as a crash would. */
  crash(): void;
  output(): string;
  /** Resolves when the output matches. */
  waitFor(pattern: RegExp, timeoutMs?: number): Promise<void>;
  /** Resolves with the exit code and the time it took after the call. */
  exited(): Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/**
 * Starts a TypeScript entrypoint in the background.
 * @param script path relative to the project root.
 * @param env environment.
 * @returns a handle.
 */
export function spawnScript(script: string, env: NodeJS.ProcessEnv): Spawned {
  // Own process group, so that a crash takes down everything the process started.
  const child = spawn(NODE_TSX[0], [...NODE_TSX.slice(1), script], {
    cwd: ROOT,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (out += d.toString()));
  const exit = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal }))
  );
  return {
    child,
    crash: () => {
      try {
        process.kill(-child.pid!, 'SIGKILL');
      } catch {
        // already gone
      }
    },
    output: () => out,
    exited: () => exit,
    waitFor: async (pattern, timeoutMs = 30_000) => {
      const deadline = Date.now() + timeoutMs;
      while (!pattern.test(out)) {
        if (child.exitCode !== null) throw new Error(`${script} exited early:\n${out}`);
        if (Date.now() > deadline) throw new Error(`timed out waiting for ${pattern} in:\n${out}`);
        await new Promise((r) => setTimeout(r, 100));
      }
    },
  };
}
