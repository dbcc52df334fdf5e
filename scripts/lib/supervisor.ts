/**
 * The one supervisor of the service's processes (`npm run dev`, `npm start`, the benchmarks' stack): starts each
 * unit once the units it runs after have started, restarts a unit whose process dies (backoff: `initialMs`,
 * doubling up to `maxMs`, back to `initialMs` after `healthyMs` of healthy running), prints one line per restart
 * with the exit code or signal, and on stop() stops every unit, dependents first (the api and the worker before
 * the servers, FerretDB before its PostgreSQL).
 *
 * A unit's `start()` resolves once its process is ready to serve (servers wait for their port or log line), and
 * is called again, with the same port and data directory, for every restart.
 */
import { spawn, type ChildProcess } from 'node:child_process';

/** A started process and how to stop it. */
export interface Started {
  child: ChildProcess;
  /** Stops the process (also called after it died, to release what it held, such as a data-dir lock). */
  stop(): Promise<void>;
}

export interface Unit {
  name: string;
  /** Starts the process; resolves once it is ready. */
  start(): Promise<Started>;
  /** Units that must have started before this one (and are stopped after it). */
  after?: string[];
  /** Restart when it dies. @default true */
  restart?: boolean;
}

export interface RestartPolicy {
  /** Wait before the first restart. */
  initialMs: number;
  /** Longest wait between restarts. */
  maxMs: number;
  /** A process that ran this long restarts after `initialMs` again. */
  healthyMs: number;
}

export interface Supervisor {
  /** Resolves once every unit has started; rejects (after stopping the others) when one could not start. */
  started: Promise<void>;
  /** Resolves with the launcher's exit code once everything has stopped (0 after stop(), 1 after a failed start). */
  done: Promise<number>;
  /** Stops every unit, dependents first; safe to call more than once. */
  stop(): void;
  /** The pid of a unit's current process (undefined while it is down). */
  pid(name: string): number | undefined;
  /** How many times each unit was restarted. */
  restarts(name: string): number;
}

/** Called for every exit of a unit's process that stop() did not ask for. */
export type ExitListener = (name: string, code: number | null, signal: NodeJS.Signals | null) => void;

const exitOf = (child: ChildProcess): Promise<{ code: number | null; signal: NodeJS.Signals | null }> =>
  child.exitCode !== null || child.signalCode !== null
    ? Promise.resolve({ code: child.exitCode, signal: child.signalCode })
    : new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));

/**
 * Stops a process: `signal`, then SIGKILL after `graceMs`. Resolves once it has exited.
 * @param child the process.
 * @param signal the polite signal.
 * @param graceMs time it gets to exit.
 */
export async function stopChild(child: ChildProcess, signal: NodeJS.Signals, graceMs: number): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = exitOf(child);
  child.kill(signal);
  const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
  await exited;
  clearTimeout(timer);
}

export interface NodeChildSpec {
  command: string;
  args: string[];
  env: NodeJS.ProcessEnv;
  cwd?: string;
  /** `inherit` (the launcher's terminal) or `pipe` (read child.stdout / child.stderr). @default inherit */
  output?: 'inherit' | 'pipe';
  /** Time it gets to exit after SIGTERM. */
  graceMs: number;
}

/**
 * A unit's start() for a service process (api, worker): spawned, ready at once (it reports its own readiness).
 * @param spec command, environment and grace time.
 * @returns the start function.
 */
export function spawnUnit(spec: NodeChildSpec): () => Promise<Started> {
  return () =>
    new Promise((resolve, reject) => {
      const child = spawn(spec.command, spec.args, {
        cwd: spec.cwd,
        env: spec.env,
        stdio: ['ignore', spec.output ?? 'inherit', spec.output ?? 'inherit'],
      });
      child.once('error', reject);
      child.once('spawn', () => resolve({ child, stop: () => stopChild(child, 'SIGTERM', spec.graceMs) }));
    });
}

/**
 * @param units what to run.
 * @param policy restart backoff.
 * @param log line printer (one line per start failure, exit and restart).
 * @param onExit told about every unexpected exit (the benchmarks treat one as a failed run).
 * @returns the supervisor.
 */
export function supervise(
  units: Unit[],
  policy: RestartPolicy,
  log: (line: string) => void,
  onExit?: ExitListener
): Supervisor {
  const byName = new Map(units.map((u) => [u.name, u]));
  for (const u of units)
    for (const dep of u.after ?? []) if (!byName.has(dep)) throw new Error(`${u.name} runs after unknown ${dep}`);
  const current = new Map<string, Started>();
  const restarts = new Map<string, number>();
  let stopping = false;
  let failed = false;
  let wake: () => void = () => undefined;
  const stopped = new Promise<void>((resolve) => (wake = resolve));
  const sleep = (ms: number): Promise<void> =>
    new Promise((resolve) => {
      const timer = setTimeout(resolve, ms);
      void stopped.then(() => {
        clearTimeout(timer);
        resolve();
      });
    });

  const firstStarts = new Map<string, Promise<void>>();
  const loops: Promise<void>[] = [];
  const firstStartOf = (name: string): Promise<void> => {
    let p = firstStarts.get(name);
    if (!p) {
      const unit = byName.get(name)!;
      let resolveFirst!: () => void;
      let rejectFirst!: (err: unknown) => void;
      p = new Promise<void>((res, rej) => ((resolveFirst = res), (rejectFirst = rej)));
      p.catch(() => undefined);
      firstStarts.set(name, p);
      const deps = Promise.all((unit.after ?? []).map(firstStartOf));
      loops.push(
        deps.then(
          () => run(unit, resolveFirst, rejectFirst),
          (err: unknown) => rejectFirst(err)
        )
      );
    }
    return p;
  };

  async function run(unit: Unit, resolveFirst: () => void, rejectFirst: (err: unknown) => void): Promise<void> {
    let delay = policy.initialMs;
    let first = true;
    while (!stopping) {
      let started: Started;
      try {
        started = await unit.start();
      } catch (err) {
        const message = (err as Error)?.message ?? String(err);
        if (first) {
          rejectFirst(err);
          return;
        }
        log(`${unit.name} could not restart: ${message}; next try in ${seconds(delay)}`);
        await sleep(delay);
        delay = Math.min(delay * 2, policy.maxMs);
        continue;
      }
      if (stopping) {
        await started.stop().catch(() => undefined);
        if (first) rejectFirst(new Error('stopped during start-up'));
        return;
      }
      current.set(unit.name, started);
      if (first) resolveFirst();
      first = false;
      const since = Date.now();
      const { code, signal } = await exitOf(started.child);
      current.delete(unit.name);
      await started.stop().catch(() => undefined); // releases what it held (data-dir lock)
      if (stopping) return;
      onExit?.(unit.name, code, signal);
      const how = signal ?? `code ${code}`;
      if (unit.restart === false) {
        log(`${unit.name} exited (${how}); not restarted`);
        return;
      }
      if (Date.now() - since >= policy.healthyMs) delay = policy.initialMs;
      const n = (restarts.get(unit.name) ?? 0) + 1;
      restarts.set(unit.name, n);
      log(`${unit.name} exited (${how}); restarting in ${seconds(delay)} (restart ${n})`);
      await sleep(delay);
      delay = Math.min(delay * 2, policy.maxMs);
    }
  }

  /** Dependents first: a unit stops once every unit that runs after it has stopped. */
  async function stopAll(): Promise<void> {
    const done = new Map<string, Promise<void>>();
    const stopUnit = (name: string): Promise<void> => {
      let p = done.get(name);
      if (!p) {
        const dependents = units.filter((u) => u.after?.includes(name)).map((u) => stopUnit(u.name));
        p = Promise.allSettled(dependents).then(async () => {
          await current
            .get(name)
            ?.stop()
            .catch((err: unknown) => log(`${name} did not stop cleanly: ${(err as Error)?.message ?? String(err)}`));
        });
        done.set(name, p);
      }
      return p;
    };
    await Promise.allSettled(units.map((u) => stopUnit(u.name)));
  }

  let stopAllDone: Promise<void> | undefined;
  const stop = (): void => {
    if (stopping) return;
    stopping = true;
    wake();
    stopAllDone = stopAll();
  };

  const started = Promise.all(units.map((u) => firstStartOf(u.name))).then(
    () => undefined,
    (err: unknown) => {
      failed = true;
      stop();
      throw err;
    }
  );
  started.catch(() => undefined);
  const done = (async () => {
    await started.catch(() => undefined);
    await stopped;
    // Loops end once every unit has stopped; a start still under way finishes and is then stopped.
    await Promise.allSettled(loops);
    await stopAllDone;
    return failed ? 1 : 0;
  })();

  return {
    started,
    done,
    stop,
    pid: (name) => current.get(name)?.child.pid,
    restarts: (name) => restarts.get(name) ?? 0,
  };
}

function seconds(ms: number): string {
  return `${ms / 1000} s`;
}

/**
 * @param count WORKER_PROCESSES.
 * @returns the supervisor's names of the worker-only processes: `worker`, then `worker-2`, `worker-3`, …
 */
export function workerNames(count: number): string[] {
  return Array.from({ length: count }, (_, i) => (i === 0 ? 'worker' : `worker-${i + 1}`));
}
