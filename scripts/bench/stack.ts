/**
 * The system under test, all on 127.0.0.1: MongoDB and a headless Temporal dev server on free ports with their
 * data in a fresh temporary directory (the same provisioning code as `npm run dev` and the tests), the fake
 * Anthropic API, and the api and the worker as child processes started the way `npm run dev` starts them (on the
 * image's Node, scripts/lib/pinnedNode.ts).
 */
import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { childEnv, loadToolConfig } from '../../lib/config';
import { bundleWorkflowsTo } from '../lib/workflowBundle';
import { serviceNodeArgs } from '../lib/serviceHeap';
import { serviceNode } from '../lib/pinnedNode';
import { transpileForDev } from '../lib/devBuild';
import { startFakeAnthropic, type FakeAnthropic } from '../fakes/anthropic';
import { freePort, provisionServers, type Provisioned } from '../servers';
import { projectRoot } from '../servers/paths';
import { cpuSecondsOf } from '../lib/proc';
import { supervise, spawnUnit, type Supervisor, type Unit } from '../lib/supervisor';

/** The database every process of the run uses. */
export const BENCH_DB = 'bench';
/** Temporal namespace of the run (the dev server creates it). */
const NAMESPACE = 'default';
/** Time a child gets to drain after SIGTERM before SIGKILL (the worker's own grace time is 8 s). */
const CHILD_GRACE_MS = 10_000;
/** Lines of each child's output kept for the failure report. */
const KEPT_LINES = 40;

/** A spawned node process of the service. */
export interface ServiceProcess {
  name: 'api' | 'worker';
  child: ChildProcess;
  /** The last lines it printed (its log at LOG_LEVEL warn). */
  lastLines(): string[];
  /** Lines logged at warn or above so far. */
  readonly warnings: number;
}

/** The running system. */
export interface Stack {
  apiUrl: string;
  /** The api's METRICS_TOKEN (`GET /metrics`). */
  metricsToken: string;
  mongoUri: string;
  /** Which MongoDB server runs: `ferretdb` or `mongod`. */
  mongoKind: string;
  /** The embedded PostgreSQL under FerretDB (`postgres://…`); absent with a mongod. */
  postgresUrl?: string;
  /** Temporal frontend `host:port` and the task queue of the run. */
  temporalAddress: string;
  taskQueue: string;
  fake: FakeAnthropic;
  api: ServiceProcess;
  worker: ServiceProcess;
  /** Process ids of the servers that were started: `temporal`, `ferretdb` or `mongod`, `postgres`. */
  serverPids: Record<string, number>;
  /** Rejects as soon as the api or the worker exits while the run needs them. */
  crashed: Promise<never>;
  /** Stops everything that was started and removes the data directory; safe to call twice. */
  stop(): Promise<void>;
}

/**
 * A service process (`node dist/<entry>.js` like scripts/dev.ts, so the pid is the service's own node process and
 * /proc/<pid> describes it) under the supervisor, without restarts: a crash fails the run.
 */
function serviceUnit(
  name: 'api' | 'worker',
  script: string,
  env: NodeJS.ProcessEnv,
  node: string
): { unit: Unit; svc: ServiceProcess } {
  const lines: string[] = [];
  let warnings = 0;
  let partial = '';
  const onData = (chunk: Buffer): void => {
    const parts = (partial + chunk.toString('utf8')).split('\n');
    partial = parts.pop() ?? '';
    for (const line of parts) {
      if (line.trim() === '') continue;
      // pino levels: 40 warn, 50 error, 60 fatal; anything not JSON (a stack trace) counts as a problem too.
      const level = /"level":(\d+)/.exec(line);
      if (!level || Number(level[1]) >= 40) warnings++;
      lines.push(line);
      if (lines.length > KEPT_LINES) lines.shift();
    }
  };
  const spawnIt = spawnUnit({
    command: node,
    // BENCH_CPU_PROF=<dir>: V8 CPU profiles of the api and the worker, written there when they stop.
    // The sources transpiled into dist/ as `npm run dev` runs them (scripts/lib/devBuild.ts); BENCH_TSX=1: through
    // tsx instead (what `npm run dev` ran before).
    args: [
      ...serviceNodeArgs(env),
      ...(process.env.BENCH_CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}`] : []),
      // BENCH_NODE_ARGS: more node flags for both (e.g. `--trace-gc`, which NODE_OPTIONS does not take).
      ...(process.env.BENCH_NODE_ARGS ?? '').split(' ').filter(Boolean),
      ...(process.env.BENCH_TSX === '1'
        ? ['--import', 'tsx', path.join(projectRoot(), script)]
        : [path.join(transpileForDev(projectRoot()).outDir, script.replace(/\.ts$/, '.js'))]),
    ],
    cwd: projectRoot(),
    env,
    output: 'pipe',
    graceMs: CHILD_GRACE_MS,
  });
  let child: ChildProcess | undefined;
  const svc: ServiceProcess = {
    name,
    get child() {
      return child!;
    },
    lastLines: () => (partial ? [...lines, partial] : [...lines]),
    get warnings() {
      return warnings;
    },
  };
  const unit: Unit = {
    name,
    restart: false,
    start: async () => {
      const started = await spawnIt();
      child = started.child;
      child.stdout?.on('data', onData);
      child.stderr?.on('data', onData);
      return started;
    },
  };
  return { unit, svc };
}

/**
 * @param url the readiness address.
 * @param timeoutMs how long to keep asking.
 * @param crashed rejects when a child died, which ends the wait early.
 */
async function waitReady(url: string, timeoutMs: number, crashed: Promise<never>): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let died: unknown;
  crashed.catch((err: unknown) => (died = err));
  while (Date.now() < deadline) {
    if (died) throw died;
    try {
      const res = await fetch(url, { signal: AbortSignal.timeout(3000) });
      if (res.status === 200) return;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`${url} did not answer 200 within ${timeoutMs / 1000} s`);
}

/**
 * Provisions and starts the whole system; on any failure, stops what was started before rethrowing.
 * @param say progress printer.
 * @param extraEnv environment of the api and the worker on top of the run's (the webhook benchmark's CA file).
 * @returns the running system.
 */
export async function startStack(say: (line: string) => void, extraEnv: Record<string, string> = {}): Promise<Stack> {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'aas-bench-'));
  let servers: Provisioned | undefined;
  let fake: FakeAnthropic | undefined;
  const services: ServiceProcess[] = [];
  let sup: Supervisor | undefined;
  let stopped: Promise<void> | undefined;

  const stop = (): Promise<void> => {
    stopped ??= (async () => {
      // The service processes first: they hold connections to everything else.
      if (sup) {
        sup.stop();
        await sup.done;
      }
      await fake?.close().catch(() => undefined);
      await servers?.stop();
      rmSync(dataDir, { recursive: true, force: true });
    })();
    return stopped;
  };

  try {
    say(`provisioning MongoDB and Temporal in ${dataDir}`);
    servers = await provisionServers({
      tools: loadToolConfig(),
      dataDir,
      namespace: NAMESPACE,
      mongoPort: await freePort(),
      temporalPort: await freePort(),
      say,
    });
    fake = await startFakeAnthropic();
    const port = await freePort();
    const mongoUri = servers.mongo!.address;
    const bundle = await bundleWorkflowsTo(path.join(dataDir, 'workflow-bundle.js'));
    const metricsToken = randomBytes(16).toString('hex');
    const env = childEnv({
      WORKFLOW_BUNDLE: bundle,
      METRICS_TOKEN: metricsToken,
      MONGODB_URI: `${mongoUri}/${BENCH_DB}`,
      TEMPORAL_ADDRESS: servers.temporal!.address,
      TEMPORAL_NAMESPACE: NAMESPACE,
      TEMPORAL_TASK_QUEUE: 'bench',
      PORT: String(port),
      HOST: '127.0.0.1',
      APP_URL: '',
      ANTHROPIC_API_KEY: 'bench',
      ANTHROPIC_BASE_URL: fake.url,
      DEFAULT_MODEL: 'claude-bench',
      LOG_LEVEL: 'warn',
      LOG_PRETTY: 'false',
      ENCRYPTION_KEY: randomBytes(32).toString('hex'),
      // Keep workspace files of the default space out of the project's .data/.
      DATA_DIR: path.join(dataDir, 'service'),
      WORKSPACES_DIR: '',
      VALIDATE_RESPONSES: 'false',
      ...extraEnv,
    });
    // The image's Node, as `npm run dev` runs them (scripts/lib/pinnedNode.ts).
    const node = await serviceNode({ say });
    say(`service processes on Node ${node.version} (${node.path})`);
    const worker = serviceUnit('worker', 'worker/index.ts', env, node.path);
    // The api unit is a service process (HTTP and a worker: executions start eagerly in it), as `npm run dev` runs
    // it; the worker unit is a worker-only process beside it (WORKER_PROCESSES=1).
    const api = serviceUnit('api', 'worker/service.ts', env, node.path);
    services.push(worker.svc, api.svc);
    let crash: (err: Error) => void = () => undefined;
    const crashed = new Promise<never>((_, reject) => (crash = reject));
    crashed.catch(() => undefined);
    const running = supervise(
      [worker.unit, api.unit],
      { initialMs: 0, maxMs: 0, healthyMs: 0 },
      say,
      (name, code, signal) => {
        const svc = name === 'api' ? api.svc : worker.svc;
        crash(
          new Error(
            `${name} exited during the run (${signal ?? `code ${code}`}); its last lines:\n  ` +
              svc.lastLines().join('\n  ')
          )
        );
      }
    );
    sup = running;
    await running.started;
    const apiUrl = `http://127.0.0.1:${port}`;
    await waitReady(`${apiUrl}/readyz`, 180_000, crashed); // room for a loaded machine (load 24 took over 60 s)
    say(`api ready at ${apiUrl} (worker pid ${worker.svc.child.pid}, api pid ${api.svc.child.pid})`);
    return {
      apiUrl,
      metricsToken,
      mongoUri,
      mongoKind: servers.mongo!.name,
      postgresUrl: servers.postgres?.address,
      temporalAddress: servers.temporal!.address,
      taskQueue: 'bench',
      fake,
      api: api.svc,
      worker: worker.svc,
      serverPids: Object.fromEntries(
        [servers.temporal, servers.mongo, servers.postgres].flatMap((s) =>
          s?.child.pid === undefined ? [] : [[s.name, s.child.pid]]
        )
      ),
      crashed,
      stop,
    };
  } catch (err) {
    for (const svc of services) {
      const lines = svc.lastLines();
      if (lines.length > 0) say(`${svc.name} output:\n  ${lines.join('\n  ')}`);
    }
    await stop();
    throw err;
  }
}

/**
 * CPU seconds (user + system, each process with its children) used so far by every process of the run: the api,
 * the worker, each server, and this process itself (the benchmark's client side) under `self`.
 * @param stack the running system.
 * @param self the name this process's own time is reported under.
 * @returns seconds per process name.
 */
export function cpuSecondsByProcess(stack: Stack, self: string): Record<string, number> {
  const own = process.cpuUsage();
  const pids: Record<string, number | undefined> = {
    api: stack.api.child.pid,
    worker: stack.worker.child.pid,
    ...stack.serverPids,
  };
  const out: Record<string, number> = { [self]: (own.user + own.system) / 1e6 };
  for (const [name, pid] of Object.entries(pids)) {
    const s = cpuSecondsOf(pid);
    if (s !== undefined) out[name] = s;
  }
  return out;
}
