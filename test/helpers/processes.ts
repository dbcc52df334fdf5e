/**
 * Runs the project's own entrypoints (api, worker, admin CLI, launchers) as child processes, as an operator would,
 * and finds and kills (SIGKILL) one part of a running stack: reused by every fault test.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { descendants, processState, readProcess, type StackProcess } from '../../scripts/lib/proc';

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

/**
 * Runs a TypeScript entrypoint to completion without blocking the test process (a server the test itself runs,
 * such as a TLS frontend, keeps answering meanwhile).
 * @param script path relative to the project root.
 * @param args arguments.
 * @param env environment.
 * @returns exit status, stdout and stderr.
 */
export async function runScriptAsync(
  script: string,
  args: string[],
  env: NodeJS.ProcessEnv
): Promise<{ status: number | null; stdout: string; stderr: string }> {
  const child = spawn(NODE_TSX[0], [...NODE_TSX.slice(1), script, ...args], { cwd: ROOT, env, stdio: 'pipe' });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
  const status = await new Promise<number | null>((resolve) => child.once('close', resolve));
  clearTimeout(timer);
  return { status, stdout, stderr };
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
 * @param prefix a command that runs it (e.g. `ip netns exec <ns>`: on a host of the multi-host bed); it must exec
 *   the entrypoint, so that the handle's process is the entrypoint's.
 * @param args the entrypoint's arguments.
 * @returns a handle.
 */
export function spawnScript(
  script: string,
  env: NodeJS.ProcessEnv,
  prefix: string[] = [],
  args: string[] = []
): Spawned {
  const argv = [...prefix, ...NODE_TSX, script, ...args];
  // Own process group, so that a crash takes down everything the process started.
  const child = spawn(argv[0], argv.slice(1), {
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

/** Command lines of each part of the stack that `npm run dev` (or `npm start`) runs, for findProcess. */
export const PARTS = {
  api: /(^|\/)api\/server\.[jt]s\b/,
  worker: /(^|\/)worker\/index\.[jt]s\b/,
  /** The service process (HTTP and workflows; worker/service.ts). */
  service: /(^|\/)worker\/service\.[jt]s\b/,
  temporal: /\btemporal\b.*\bstart-dev\b/,
  ferretdb: /\bferretdb\b.*--listen-addr/,
  /** The postmaster (its backends carry no `-D`). */
  postgres: /\bpostgres\b.*\s-D\s/,
} as const;

/**
 * Waits until exactly one descendant of `rootPid` matches and returns it.
 * @param rootPid the launcher's pid.
 * @param pattern its command line (see PARTS).
 * @param options.not skip this pid (the process a test just killed, until it is gone).
 * @param options.timeoutMs how long to look.
 * @returns the process.
 */
export async function findProcess(
  rootPid: number,
  pattern: RegExp,
  options: { not?: number; timeoutMs?: number } = {}
): Promise<StackProcess> {
  const deadline = Date.now() + (options.timeoutMs ?? 60_000);
  for (;;) {
    const matches = descendants(rootPid).filter((p) => pattern.test(p.cmd) && p.pid !== options.not);
    if (matches.length === 1) return matches[0];
    if (Date.now() > deadline) {
      throw new Error(
        `expected one process matching ${pattern} below pid ${rootPid}, found ${matches.length}:\n` +
          descendants(rootPid)
            .map((p) => `  ${p.pid} ${p.cmd}`)
            .join('\n')
      );
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}

/**
 * Kills a process with SIGKILL, as a crash would, and waits until it is gone (reaped by its parent).
 * @param pid the process.
 * @param timeoutMs how long to wait.
 */
export async function killHard(pid: number, timeoutMs = 10_000): Promise<void> {
  try {
    process.kill(pid, 'SIGKILL');
  } catch {
    return; // already gone
  }
  const deadline = Date.now() + timeoutMs;
  while (readProcess(pid) !== undefined && !/^Z/.test(processState(pid))) {
    if (Date.now() > deadline) throw new Error(`pid ${pid} still runs ${timeoutMs} ms after SIGKILL`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/**
 * Starts a worker process (worker/index.ts) and waits until it says it started.
 * @param env the process's environment (the caller's test environment, e.g. from childTestEnv).
 * @param started the caller's list of processes to stop in afterAll: the worker joins it before it is waited for.
 * @returns the worker.
 */
export async function spawnWorker(env: NodeJS.ProcessEnv, started: Spawned[]): Promise<Spawned> {
  const worker = spawnScript('worker/index.ts', env);
  started.push(worker);
  await worker.waitFor(/worker started/, 90_000);
  return worker;
}
