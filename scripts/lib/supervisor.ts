/**
 * Runs the api and worker as child processes: forwards SIGINT/SIGTERM, and when one child exits on its own, stops
 * the others. Used by `npm run dev` (TypeScript sources through tsx) and `npm start` (compiled dist/).
 */
import { spawn, type ChildProcess } from 'node:child_process';

export interface ChildSpec {
  name: string;
  command: string;
  args: string[];
  env: NodeJS.ProcessEnv;
}

export interface Supervisor {
  /** Resolves with the exit code the launcher should use once every child has exited. */
  done: Promise<number>;
  /** Asks every child to stop (SIGTERM; SIGKILL after `graceMs`). */
  stop(): void;
}

/**
 * @param specs the processes to run.
 * @param graceMs time a child gets to exit after SIGTERM.
 * @param log line printer.
 * @returns the supervisor.
 */
export function supervise(specs: ChildSpec[], graceMs: number, log: (line: string) => void): Supervisor {
  let stopping = false;
  let exitCode = 0;
  const children = new Map<string, ChildProcess>();
  const exits = specs.map(
    (spec) =>
      new Promise<void>((resolve) => {
        const child = spawn(spec.command, spec.args, { env: spec.env, stdio: ['ignore', 'inherit', 'inherit'] });
        children.set(spec.name, child);
        child.on('error', (err) => {
          log(`${spec.name} could not start: ${err.message}`);
          exitCode = 1;
          resolve();
          stop();
        });
        child.on('exit', (code, signal) => {
          children.delete(spec.name);
          if (!stopping) {
            log(`${spec.name} exited (${signal ?? `code ${code}`}); stopping the others`);
            exitCode = 1;
            stop();
          } else if (code !== 0 && code !== null) {
            exitCode = exitCode || code;
          }
          resolve();
        });
      })
  );
  function stop(): void {
    if (stopping) return;
    stopping = true;
    for (const child of children.values()) {
      child.kill('SIGTERM');
      setTimeout(() => child.kill('SIGKILL'), graceMs).unref();
    }
  }
  return { done: Promise.all(exits).then(() => exitCode), stop };
}
