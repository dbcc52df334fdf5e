/**
 * Data-block queries, out of the api's process [docs/decisions.md "Data blocks"]. The engine (DuckDB,
 * lib/dataQueryEngine.ts) runs in child processes (lib/dataQueryProcess.ts) forked on demand, one query at a time
 * each, at most `concurrency` per api process, reused while healthy:
 * - each has its own heap cap (`--max-old-space-size`) besides the engine's `memory_limit`, and is killed
 *   (SIGKILL) when its query outlives the time limit by `KILL_GRACE_MS`: a runaway query costs that process, never
 *   the api's memory or event loop;
 * - the answer is capped in rows and in bytes (JSON of the rows) inside the child, before it is sent;
 * - waiting queries are queued **per organization**; a free slot goes to the waiting organization whose last query
 *   started longest ago (one with nothing running first): another organization's first query waits for one
 *   running query to end at most (≤ the time limit + grace), whatever one organization has queued. An
 *   organization with `concurrency × 4` queries waiting gets 503 with Retry-After (one query's time limit) for more;
 * - a query whose client goes away (issue 38) leaves the queue, or, running, has its process killed at once.
 * Table names are resolved here, in the api (workspace path rules, the storage), when the child asks.
 */
import { fork, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import type { Json } from '@duckdb/node-api';
import { AppError, OverloadedError, QueryLimitError, RequestAbortedError, rebuildError } from './errors';

/** The readers by file extension (lower case). */
const READERS: Record<string, string> = {
  csv: 'read_csv',
  tsv: 'read_csv',
  json: 'read_json_auto',
  jsonl: 'read_json_auto',
  ndjson: 'read_json_auto',
  parquet: 'read_parquet',
};

/** @returns the reader of a file name, or undefined when it is not a tabular file. */
export function readerFor(name: string): string | undefined {
  const dot = name.lastIndexOf('.');
  return dot < 0 ? undefined : READERS[name.slice(dot + 1).toLowerCase()];
}

export interface QueryLimits {
  maxRows: number;
  /** Most bytes of the rows as JSON; past it the query is stopped (422). */
  maxBytes: number;
  timeoutMs: number;
  memoryBytes: number;
}

export interface QueryColumn {
  name: string;
  /** DuckDB's type name (`BIGINT`, `DOUBLE`, `VARCHAR`, `DATE`, `DECIMAL(18,3)`, `VARCHAR[]`, …). */
  type: string;
}

export interface QueryResult {
  columns: QueryColumn[];
  /** Rows as arrays in column order; JSON values (64-bit and larger integers and decimals as strings). */
  rows: Json[][];
  /** More rows than `maxRows` were available (the answer holds the first `maxRows`). */
  truncated: boolean;
  /** The files the query read, as the caller named them. */
  tables: string[];
}

/**
 * @param name a table name as written in the query.
 * @returns the local file to read, or null when the name is not a tabular file of the workspace.
 * @throws ValidationError for a name that breaks the workspace path rules.
 */
export type TableResolver = (name: string) => Promise<string | null>;

interface WireError {
  status: number;
  code: string;
  message: string;
}

/** Messages of the api to a query process. */
export type FromParent =
  | { type: 'run'; sql: string; limits: QueryLimits }
  | { type: 'resolved'; ask: number; file: string | null; error?: WireError };

/** Messages of a query process to the api. */
export type ToParent =
  | { type: 'ready' }
  | { type: 'resolve'; ask: number; name: string }
  | { type: 'done'; result: QueryResult }
  | { type: 'failed'; error: WireError };

/** Queries an organization may have waiting, per query slot of the process. */
const QUEUE_PER_SLOT = 4;

/** How long past its time limit a query's process may take to stop it itself before it is killed. */
export const KILL_GRACE_MS = 1000;

/** The JS heap of a query process: the answer (up to `maxBytes` of JSON) a few times over, at least 128 MiB. */
function heapMegabytes(limits: QueryLimits): number {
  return Math.max(128, Math.ceil((limits.maxBytes * 4) / 1024 / 1024) + 64);
}

interface Worker {
  child: ChildProcess;
  heapMb: number;
  ready: Promise<void>;
}

function spawnWorker(heapMb: number): Worker {
  const ext = path.extname(__filename);
  const entry = path.join(__dirname, `dataQueryProcess${ext}`);
  const child = fork(entry, [], {
    // Sources run through tsx (dev, tests); the build runs the compiled file.
    execArgv: [`--max-old-space-size=${heapMb}`, ...(ext === '.ts' ? ['--import', 'tsx'] : [])],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    serialization: 'advanced',
  });
  const ready = new Promise<void>((resolve, reject) => {
    const onMessage = (m: ToParent) => {
      if (m.type !== 'ready') return;
      child.off('message', onMessage);
      child.off('exit', onExit);
      resolve();
    };
    const onExit = () => reject(new Error('The data-query process stopped while starting'));
    child.on('message', onMessage);
    child.once('exit', onExit);
  });
  ready.catch(() => undefined);
  return { child, heapMb, ready };
}

interface Job {
  tenant: string;
  sql: string;
  resolveTable: TableResolver;
  limits: QueryLimits;
  concurrency: number;
  /** Aborted when the query's client goes away. */
  signal?: AbortSignal;
  resolve(result: QueryResult): void;
  reject(err: unknown): void;
}

let running = 0;
const idle: Worker[] = [];
/** Waiting queries by organization. */
const queues = new Map<string, Job[]>();
/** Per organization with queries running or waiting: how many run, and when its last one started (a sequence). */
const tenants = new Map<string, { running: number; lastStart: number }>();
let starts = 0;

/**
 * The next query: the first waiting one of the organization whose last query started longest ago (an organization
 * with nothing running comes first), so a newcomer's first query goes before the rest of anyone's queue.
 */
function nextJob(): Job | undefined {
  let chosen: string | undefined;
  for (const tenant of queues.keys()) {
    const last = tenants.get(tenant)?.lastStart ?? -1;
    if (chosen === undefined || last < (tenants.get(chosen)?.lastStart ?? -1)) chosen = tenant;
  }
  if (chosen === undefined) return undefined;
  const jobs = queues.get(chosen)!;
  const job = jobs.shift();
  if (jobs.length === 0) queues.delete(chosen);
  return job;
}

/** A process with a query holds the api's event loop open (so a query is never dropped); an idle one does not. */
function hold(w: Worker, busy: boolean): void {
  const channel = (w.child as unknown as { channel?: { ref(): void; unref(): void } }).channel;
  if (busy) {
    w.child.ref();
    channel?.ref();
  } else {
    w.child.unref();
    channel?.unref();
  }
}

function isAlive(w: Worker): boolean {
  return w.child.exitCode === null && w.child.signalCode === null && w.child.connected;
}

/** Runs one job on an idle (or new) process; then takes the next waiting job, if any. */
function start(job: Job): void {
  running += 1;
  const tenant = tenants.get(job.tenant) ?? { running: 0, lastStart: 0 };
  tenant.running += 1;
  tenant.lastStart = starts += 1;
  tenants.set(job.tenant, tenant);
  const heapMb = heapMegabytes(job.limits);
  let worker = idle.pop();
  while (worker && (!isAlive(worker) || worker.heapMb !== heapMb)) {
    worker.child.kill('SIGKILL');
    worker = idle.pop();
  }
  const w = worker ?? spawnWorker(heapMb);
  hold(w, true);
  void runOn(w, job).finally(() => {
    hold(w, false);
    running -= 1;
    tenant.running -= 1;
    if (tenant.running === 0 && !queues.has(job.tenant)) tenants.delete(job.tenant);
    if (isAlive(w) && idle.length < job.concurrency) idle.push(w);
    else w.child.kill('SIGKILL');
    const next = nextJob();
    if (next) start(next);
  });
}

async function runOn(w: Worker, job: Job): Promise<void> {
  try {
    await w.ready;
  } catch (err) {
    job.reject(err);
    return;
  }
  const { child } = w;
  if (job.signal?.aborted) {
    job.reject(new RequestAbortedError());
    return;
  }
  await new Promise<void>((done) => {
    let settled = false;
    let killedForTime = false;
    const finish = (fn: () => void) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      job.signal?.removeEventListener('abort', onAbort);
      child.off('message', onMessage);
      child.off('exit', onExit);
      fn();
      done();
    };
    const timer = setTimeout(() => {
      killedForTime = true;
      child.kill('SIGKILL');
    }, job.limits.timeoutMs + KILL_GRACE_MS);
    // The client went away: nobody reads the answer, so the query's process is killed now.
    const onAbort = () => child.kill('SIGKILL');
    job.signal?.addEventListener('abort', onAbort, { once: true });
    const onExit = () =>
      finish(() =>
        job.reject(
          job.signal?.aborted && !killedForTime
            ? new RequestAbortedError()
            : new QueryLimitError(
                killedForTime
                  ? `The query exceeded its time limit of ${job.limits.timeoutMs} ms`
                  : 'The query exceeded its memory limit (its engine stopped)'
              )
        )
      );
    const onMessage = (m: ToParent) => {
      if (m.type === 'done') finish(() => job.resolve(m.result));
      else if (m.type === 'failed')
        finish(() => job.reject(m.error.status < 500 ? rebuildError(m.error) : new Error(m.error.message)));
      else if (m.type === 'resolve') {
        job.resolveTable(m.name).then(
          (file) => child.send({ type: 'resolved', ask: m.ask, file } satisfies FromParent),
          (err: unknown) => {
            if (err instanceof AppError && err.expose)
              child.send({
                type: 'resolved',
                ask: m.ask,
                file: null,
                error: { status: err.status, code: err.code, message: err.message },
              } satisfies FromParent);
            else {
              child.kill('SIGKILL');
              finish(() => job.reject(err));
            }
          }
        );
      }
    };
    child.on('message', onMessage);
    child.once('exit', onExit);
    child.send({ type: 'run', sql: job.sql, limits: job.limits } satisfies FromParent);
  });
}

/**
 * Runs one read-only query in a query process, in its organization's turn.
 * @param sql the query.
 * @param resolveTable maps a table name to its local file (null: not a tabular file of the workspace).
 * @param limits rows, bytes, time, memory, and how many queries run at once in this api process.
 * @param tenant the organization whose queue the query waits in.
 * @param signal aborted when the query's client goes away: the query leaves the queue, or its process is killed.
 * @returns typed columns and rows.
 * @throws ValidationError (400) for anything but one SELECT over workspace files; QueryLimitError (422) past the
 * time, bytes or memory limit; OverloadedError (503, Retry-After) when the organization already has
 * `concurrency × 4` queries waiting; RequestAbortedError when the signal aborts first.
 */
export function runReadOnlyQuery(
  sql: string,
  resolveTable: TableResolver,
  limits: QueryLimits & { concurrency: number },
  tenant: string,
  signal?: AbortSignal
): Promise<QueryResult> {
  const { concurrency, ...engineLimits } = limits;
  return new Promise<QueryResult>((resolve, reject) => {
    if (signal?.aborted) return reject(new RequestAbortedError());
    const job: Job = { tenant, sql, resolveTable, limits: engineLimits, concurrency, signal, resolve, reject };
    if (running < concurrency && queues.size === 0) return start(job);
    const queue = queues.get(tenant) ?? [];
    if (queue.length >= concurrency * QUEUE_PER_SLOT)
      return reject(new OverloadedError(Math.ceil(limits.timeoutMs / 1000)));
    queue.push(job);
    queues.set(tenant, queue);
    signal?.addEventListener(
      'abort',
      () => {
        const waiting = queues.get(tenant);
        const at = waiting?.indexOf(job) ?? -1;
        if (at < 0) return; // started meanwhile: runOn kills its process
        waiting!.splice(at, 1);
        if (waiting!.length === 0) queues.delete(tenant);
        if (!queues.has(tenant) && tenants.get(tenant)?.running === 0) tenants.delete(tenant);
        reject(new RequestAbortedError());
      },
      { once: true }
    );
  });
}

/** @returns the queries of this process: running, and waiting in the organizations' queues. */
export function dataQueryLoad(): { running: number; waiting: number } {
  let waiting = 0;
  for (const queue of queues.values()) waiting += queue.length;
  return { running, waiting };
}
