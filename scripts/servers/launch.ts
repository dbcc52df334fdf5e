/**
 * Starts the local servers: the temporal CLI dev server (SQLite file, optional Web UI) and MongoDB (mongod or
 * FerretDB on SQLite), each bound to 127.0.0.1 with its log in the data directory. Every failure becomes one
 * ProvisionError line: a port in use, a data directory locked by another process, a server that exits early.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, mkdirSync, openSync, readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { Connection } from '@temporalio/client';
import { SEARCH_ATTRIBUTES } from '../../workflows/searchAttributes';
import { ProvisionError, type MongoBinary } from './binaries';

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

/**
 * @param port TCP port.
 * @returns whether something accepts connections on 127.0.0.1:port.
 */
export async function portInUse(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const sock = net.connect({ host: '127.0.0.1', port });
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

function launch(name: string, bin: string, args: string[], logFile: string): ChildProcess {
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

function stopper(child: ChildProcess, release: () => void): () => Promise<void> {
  return async () => {
    if (child.exitCode === null && child.signalCode === null) {
      const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
      await exited;
      clearTimeout(timer);
    }
    release();
  };
}

function ensurePortFree(port: number, name: string, hint: string): Promise<void> {
  return portInUse(port).then((used) => {
    if (used) throw new ProvisionError(`port ${port} is already in use, so ${name} cannot start: ${hint}`);
  });
}

/**
 * Starts the temporal CLI dev server.
 * @param opts binary, data directory, ports (uiPort undefined = headless).
 * @returns the running server; `address` is 127.0.0.1:port.
 */
export async function startTemporal(opts: {
  bin: string;
  dataDir: string;
  port: number;
  uiPort?: number;
  namespace: string;
}): Promise<RunningServer> {
  await ensurePortFree(
    opts.port,
    'the Temporal dev server',
    'stop whatever holds it (an earlier `npm run dev`?) or set TEMPORAL_ADDRESS to use that server'
  );
  if (opts.uiPort) await ensurePortFree(opts.uiPort, 'the Temporal Web UI', 'stop whatever holds it');
  const release = lockDataDir(opts.dataDir, 'another Temporal dev server');
  const logFile = path.join(opts.dataDir, 'temporal.log');
  const args = [
    'server',
    'start-dev',
    '--ip',
    '127.0.0.1',
    '--port',
    String(opts.port),
    '--db-filename',
    path.join(opts.dataDir, 'temporal.db'),
    '--namespace',
    opts.namespace,
    '--log-level',
    'warn',
    // Eager activity dispatch: an activity scheduled by a workflow task goes straight back to that worker.
    '--dynamic-config-value',
    'system.enableActivityEagerExecution=true',
    ...(opts.uiPort ? ['--ui-port', String(opts.uiPort)] : ['--headless']),
    ...Object.entries(SEARCH_ATTRIBUTES).flatMap(([name, type]) => ['--search-attribute', `${name}=${type}`]),
  ];
  const child = launch('temporal', opts.bin, args, logFile);
  const address = `127.0.0.1:${opts.port}`;
  try {
    await waitUntil(
      'the Temporal dev server',
      child,
      logFile,
      async () => {
        if (!(await portInUse(opts.port))) return false;
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
 * Starts mongod or FerretDB.
 * @param opts binary, data directory, port.
 * @returns the running server; `address` is a mongodb:// URI without a database.
 */
export async function startMongo(opts: { server: MongoBinary; dataDir: string; port: number }): Promise<RunningServer> {
  await ensurePortFree(
    opts.port,
    'MongoDB',
    'stop whatever holds it (an earlier `npm run dev`?) or set MONGODB_URI to use that server'
  );
  const release = lockDataDir(opts.dataDir, 'another MongoDB server');
  const logFile = path.join(opts.dataDir, `${opts.server.kind}.log`);
  const dbDir = path.join(opts.dataDir, 'db');
  mkdirSync(dbDir, { recursive: true });
  const args =
    opts.server.kind === 'mongod'
      ? ['--dbpath', dbDir, '--port', String(opts.port), '--bind_ip', '127.0.0.1', '--quiet']
      : ['--listen-addr', `127.0.0.1:${opts.port}`, '--sqlite-dir', dbDir, '--log-level', 'error'];
  const child = launch(opts.server.kind, opts.server.path, args, logFile);
  try {
    await waitUntil(opts.server.kind, child, logFile, () => portInUse(opts.port), 60_000);
  } catch (err) {
    release();
    throw err;
  }
  return { name: opts.server.kind, address: `mongodb://127.0.0.1:${opts.port}`, child, stop: stopper(child, release) };
}
