/**
 * Starts the local servers: the Temporal dev server (tools/temporal-dev, or a temporal CLI; SQLite file in WAL mode, optional Web UI) and MongoDB
 * (mongod, or FerretDB on an embedded PostgreSQL), each bound to 127.0.0.1 with its log in the data directory.
 * Every failure becomes one ProvisionError line: a port in use, a data directory locked by another process, a
 * server that exits early.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import {
  closeSync,
  existsSync,
  mkdirSync,
  openSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { Connection } from '@temporalio/client';
import { SEARCH_ATTRIBUTES } from '../../workflows/searchAttributes';
import { stopChild } from '../lib/supervisor';
import { ProvisionError, type MongoBinary, type PostgresBinaries } from './binaries';

export interface RunningServer {
  name: string;
  /** host:port (Temporal) or mongodb:// URI (MongoDB). */
  address: string;
  child: ChildProcess;
  stop(): Promise<void>;
}

/** @returns a free TCP port on 127.0.0.1. */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as net.AddressInfo;
      srv.close(() => resolve(port));
    });
  });
}

/** The address the servers listen on unless told otherwise: this machine's loopback. */
export const LOOPBACK = '127.0.0.1';

/**
 * @param port TCP port.
 * @param host the address (default loopback).
 * @returns whether something accepts connections on host:port.
 */
export async function portInUse(port: number, host = LOOPBACK): Promise<boolean> {
  return new Promise((resolve) => {
    const sock = net.connect({ host, port });
    sock.once('connect', () => {
      sock.destroy();
      resolve(true);
    });
    sock.once('error', () => resolve(false));
  });
}

/**
 * Takes an exclusive lock on a data directory (a pid file), removing a stale one.
 * @param dir the data directory.
 * @param what what uses it, for the error message.
 * @returns a function releasing the lock.
 */
export function lockDataDir(dir: string, what: string): () => void {
  mkdirSync(dir, { recursive: true });
  const file = path.join(dir, '.lock');
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const fd = openSync(file, 'wx');
      writeFileSync(fd, String(process.pid));
      closeSync(fd);
      return () => {
        try {
          if (readFileSync(file, 'utf8') === String(process.pid)) unlinkSync(file);
        } catch {
          // already gone
        }
      };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      const pid = Number(readFileSync(file, 'utf8'));
      if (Number.isInteger(pid) && pid > 0 && pid !== process.pid && isAlive(pid)) {
        throw new ProvisionError(`${dir} is in use by ${what} (pid ${pid}): stop that process first`);
      }
      unlinkSync(file); // stale lock from a process that died
    }
  }
  throw new ProvisionError(`cannot lock ${dir}`);
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function tail(file: string, lines = 5): string {
  try {
    return readFileSync(file, 'utf8').trim().split('\n').slice(-lines).join('\n    ');
  } catch {
    return '(no log)';
  }
}

function launch(bin: string, args: string[], logFile: string): ChildProcess {
  const fd = openSync(logFile, 'a');
  const child = spawn(bin, args, { stdio: ['ignore', fd, fd], detached: false });
  closeSync(fd);
  return child;
}

async function waitUntil(
  name: string,
  child: ChildProcess,
  logFile: string,
  ready: () => Promise<boolean>,
  timeoutMs: number
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let exited: number | null | undefined;
  child.once('exit', (code) => {
    exited = code;
  });
  while (Date.now() < deadline) {
    if (exited !== undefined) {
      throw new ProvisionError(
        `${name} exited during start-up (code ${exited}); last log lines:\n    ${tail(logFile)}\n  log: ${logFile}`
      );
    }
    if (await ready().catch(() => false)) return;
    await new Promise((r) => setTimeout(r, 150));
  }
  child.kill('SIGKILL');
  throw new ProvisionError(`${name} did not become ready within ${timeoutMs / 1000} s; log: ${logFile}`);
}

function stopper(child: ChildProcess, release: () => void, signal: NodeJS.Signals = 'SIGTERM'): () => Promise<void> {
  return async () => {
    await stopChild(child, signal, 5000);
    release();
  };
}

function ensurePortFree(port: number, name: string, hint: string, host = LOOPBACK): Promise<void> {
  return portInUse(port, host).then((used) => {
    if (used) throw new ProvisionError(`port ${port} is already in use, so ${name} cannot start: ${hint}`);
  });
}

/**
 * Dynamic configuration of the Temporal server, the same for the dev server (these values as
 * `--dynamic-config-value`) and for docker-compose.yml (deploy/temporal/dynamicconfig.yaml, checked against this by
 * test/dockerCompose.test.ts):
 * - eager activity dispatch: an activity scheduled by a workflow task goes straight back to that worker;
 * - the history service hands each new workflow task to matching from its transfer queue, whose reader loads at most
 *   20 times a second by default: a task waited ~25 ms on average (up to 50) before any worker could see it, twice
 *   per execution. 100 loads a second: a JSON execution alone on the stack 151 → 90 ms p50, with the same
 *   throughput at concurrency 20 and 100 (docs/benchmarks.md "Workflow tasks held by the transfer queue");
 * - fairness in matching (server 1.29, off by default; implies the priority matcher): a backlogged task queue hands
 *   out tasks by priority key first, then in proportion to the weights of their fairness keys, the organization
 *   (workflows/executionStart.ts `workPriority`; docs/fairness.md).
 */
export const TEMPORAL_DYNAMIC_CONFIG: Readonly<Record<string, boolean | number>> = {
  'system.enableActivityEagerExecution': true,
  'history.transferProcessorMaxPollRPS': 100,
  'matching.enableFairness': true,
};
/**
 * Starts the Temporal dev server: the project's (tools/temporal-dev) or a temporal CLI, which take the same command
 * line (`server start-dev …`).
 * @param opts binary, data directory, ports (uiPort undefined = headless), and the address other processes reach it
 *   at (default loopback). Off loopback (a host of the multi-host test bed) the dev server listens on every interface
 *   of its host: its services reach one another at 127.0.0.1 whatever `--ip` says (temporal CLI 1.5.1,
 *   devserver/server.go, which tools/temporal-dev/server.go copies: static hosts on localhost, listeners on `--ip`), so `--ip <address>` alone breaks every
 *   workflow start.
 * @returns the running server; `address` is host:port.
 */
export async function startTemporal(opts: {
  bin: string;
  dataDir: string;
  port: number;
  uiPort?: number;
  namespace: string;
  host?: string;
}): Promise<RunningServer> {
  const host = opts.host ?? LOOPBACK;
  await ensurePortFree(
    opts.port,
    'the Temporal dev server',
    'stop whatever holds it (an earlier `npm run dev`?) or set TEMPORAL_ADDRESS to use that server',
    host
  );
  if (opts.uiPort) await ensurePortFree(opts.uiPort, 'the Temporal Web UI', 'stop whatever holds it', host);
  const release = lockDataDir(opts.dataDir, 'another Temporal dev server');
  const logFile = path.join(opts.dataDir, 'temporal.log');
  const args = [
    'server',
    'start-dev',
    '--ip',
    host === LOOPBACK ? LOOPBACK : '0.0.0.0',
    '--port',
    String(opts.port),
    '--db-filename',
    path.join(opts.dataDir, 'temporal.db'),
    '--namespace',
    opts.namespace,
    '--log-level',
    'warn',
    // WAL with normal syncs: about 3x the default's throughput here, and still durable across a crash of the
    // process (only a power loss can take the last transactions).
    '--sqlite-pragma',
    'journal_mode=wal',
    '--sqlite-pragma',
    'synchronous=normal',
    ...Object.entries(TEMPORAL_DYNAMIC_CONFIG).flatMap(([key, value]) => [
      '--dynamic-config-value',
      `${key}=${JSON.stringify(value)}`,
    ]),
    ...(opts.uiPort ? ['--ui-port', String(opts.uiPort)] : ['--headless']),
    ...Object.entries(SEARCH_ATTRIBUTES).flatMap(([name, type]) => ['--search-attribute', `${name}=${type}`]),
  ];
  const child = launch(opts.bin, args, logFile);
  const address = `${host}:${opts.port}`;
  try {
    await waitUntil(
      'the Temporal dev server',
      child,
      logFile,
      async () => {
        if (!(await portInUse(opts.port, host))) return false;
        const conn = await Connection.connect({ address, connectTimeout: 1000 });
        try {
          await conn.workflowService.describeNamespace({ namespace: opts.namespace });
          return true;
        } finally {
          await conn.close();
        }
      },
      90_000
    );
  } catch (err) {
    release();
    throw err;
  }
  return { name: 'temporal', address, child, stop: stopper(child, release) };
}

/**
 * Starts mongod or FerretDB (FerretDB needs `postgresUrl`: the PostgreSQL it stores its data in).
 * @param opts binary, data directory, port, and the address to listen on (default loopback).
 * @returns the running server; `address` is a mongodb:// URI without a database.
 */
export async function startMongo(opts: {
  server: MongoBinary;
  dataDir: string;
  port: number;
  postgresUrl?: string;
  host?: string;
}): Promise<RunningServer> {
  const host = opts.host ?? LOOPBACK;
  await ensurePortFree(
    opts.port,
    'MongoDB',
    'stop whatever holds it (an earlier `npm run dev`?) or set MONGODB_URI to use that server',
    host
  );
  if (opts.server.kind === 'ferretdb' && !opts.postgresUrl)
    throw new ProvisionError('FerretDB needs a PostgreSQL server');
  const release = lockDataDir(opts.dataDir, 'another MongoDB server');
  const logFile = path.join(opts.dataDir, `${opts.server.kind}.log`);
  let args: string[];
  if (opts.server.kind === 'mongod') {
    const dbDir = path.join(opts.dataDir, 'db');
    mkdirSync(dbDir, { recursive: true });
    args = ['--dbpath', dbDir, '--port', String(opts.port), '--bind_ip', host, '--quiet'];
  } else {
    args = ['--listen-addr', `${host}:${opts.port}`, '--postgresql-url', opts.postgresUrl!, '--log-level', 'error'];
  }
  const child = launch(opts.server.path, args, logFile);
  try {
    await waitUntil(opts.server.kind, child, logFile, () => portInUse(opts.port, host), 60_000);
  } catch (err) {
    release();
    throw err;
  }
  return { name: opts.server.kind, address: `mongodb://${host}:${opts.port}`, child, stop: stopper(child, release) };
}

/**
 * PostgreSQL refuses to run as root. As root, it runs in a user namespace where our uid 0 is mapped to uid 1:
 * PostgreSQL sees a non-root user, while the kernel still checks files as their owner (us), so the data stays
 * ours, wherever the data directory is (also below a 0700 home or temporary directory), and no account is made.
 * @returns the command prefix (empty when not root).
 */
function postgresPrefix(): string[] {
  if (process.getuid?.() !== 0) return [];
  const prefix = ['unshare', '--user', '--map-user=1', '--map-group=1'];
  try {
    execFileSync(prefix[0], [...prefix.slice(1), 'true'], { stdio: 'ignore' });
  } catch {
    throw new ProvisionError(
      'PostgreSQL cannot run as root, and `unshare --user` (util-linux) is not available to run it as another uid: run as a non-root user, or set MONGODB_URI'
    );
  }
  return prefix;
}

/** Runs a PostgreSQL binary, through `prefix` (see postgresPrefix). */
function pgCommand(prefix: string[], bin: string, args: string[]): [string, string[]] {
  return prefix.length ? [prefix[0], [...prefix.slice(1), bin, ...args]] : [bin, args];
}

/**
 * Runs initdb once: into a temporary directory renamed into place when complete, so an interrupted
 * initialisation never leaves a half-made cluster behind.
 */
function initPostgres(bins: PostgresBinaries, pgData: string, logFile: string, prefix: string[]): void {
  if (existsSync(path.join(pgData, 'PG_VERSION'))) return;
  const tmp = `${pgData}.init-${process.pid}`;
  rmSync(tmp, { recursive: true, force: true });
  // UTF8 and the C locale are what FerretDB accepts; trust on loopback only, like the other dev servers.
  const [cmd, args] = pgCommand(prefix, bins.initdb, [
    '-D',
    tmp,
    '-U',
    'postgres',
    '--auth=trust',
    '-E',
    'UTF8',
    '--locale=C',
  ]);
  try {
    const fd = openSync(logFile, 'a');
    try {
      execFileSync(cmd, args, { stdio: ['ignore', fd, fd], env: { ...process.env, LC_ALL: 'C' } });
    } finally {
      closeSync(fd);
    }
  } catch {
    rmSync(tmp, { recursive: true, force: true });
    throw new ProvisionError(`initdb failed; last log lines:\n    ${tail(logFile)}\n  log: ${logFile}`);
  }
  renameSync(tmp, pgData);
}

/**
 * Starts the embedded PostgreSQL that FerretDB stores its data in: initialised on first use under
 * `<dataDir>/data`, bound to 127.0.0.1 only (no Unix socket).
 * @param opts binaries, data directory, port; `settings`: more `name=value` settings, after the usual ones
 *   (scripts/bench/groupCommit.ts tries some).
 * @returns the running server; `address` is a postgres:// URL of its `postgres` database.
 */
export async function startPostgres(opts: {
  bins: PostgresBinaries;
  dataDir: string;
  port: number;
  settings?: string[];
}): Promise<RunningServer> {
  await ensurePortFree(opts.port, 'PostgreSQL', 'stop whatever holds it or set MONGODB_URI to use another server');
  const release = lockDataDir(opts.dataDir, 'another embedded PostgreSQL');
  const logFile = path.join(opts.dataDir, 'postgres.log');
  const pgData = path.join(opts.dataDir, 'data');
  let child: ChildProcess;
  try {
    const prefix = postgresPrefix();
    initPostgres(opts.bins, pgData, logFile, prefix);
    const logStart = existsSync(logFile) ? statSync(logFile).size : 0; // earlier starts' lines do not count
    child = launch(
      ...pgCommand(prefix, opts.bins.postgres, [
        '-D',
        pgData,
        '-p',
        String(opts.port),
        '-c',
        'listen_addresses=127.0.0.1',
        '-c',
        'unix_socket_directories=',
        '-c',
        'lc_messages=C',
        // FerretDB holds a pool per process and the index mirror one connection; tests open many databases.
        '-c',
        'max_connections=200',
        ...(opts.settings ?? []).flatMap((setting) => ['-c', setting]),
      ]),
      logFile
    );
    await waitUntil(
      'PostgreSQL',
      child,
      logFile,
      async () =>
        readFileSync(logFile)
          .subarray(logStart)
          .toString('utf8')
          .includes('database system is ready to accept connections'),
      60_000
    );
  } catch (err) {
    release();
    throw err;
  }
  return {
    name: 'postgres',
    address: `postgres://postgres@127.0.0.1:${opts.port}/postgres`,
    child,
    // SIGINT is PostgreSQL's fast shutdown (SIGTERM would wait for every client to disconnect).
    stop: stopper(child, release, 'SIGINT'),
  };
}
