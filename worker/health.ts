/**
 * The worker's health file [docs/decisions.md "Health of a worker"]: every process that runs a Temporal worker (the
 * worker-only process, and a process that also serves HTTP) rewrites WORKER_HEALTH_FILE every HEALTH_REFRESH_MS
 * while its worker is running and both its pollers (workflow and activity tasks) are polling. The container's
 * health check (scripts/healthcheck.ts) reads it: missing, older than HEALTH_STALE_MS, or written by a worker that
 * was not polling means unhealthy. A worker that stopped, whose pollers failed, or whose event loop is stuck stops
 * refreshing it, so the check fails; a process that never started its worker never writes it.
 */
import { readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import type { Worker } from '@temporalio/worker';

/** How often the file is rewritten. */
export const HEALTH_REFRESH_MS = 5_000;
/** A file older than this says the worker stopped polling (a few refreshes missed, not one slow one). */
export const HEALTH_STALE_MS = 30_000;

/** What the file holds (for people reading it; the check uses its age). */
interface HealthRecord {
  at: string;
  pid: number;
  taskQueue: string;
}

/**
 * @param worker the running worker.
 * @returns whether it runs and both its pollers poll.
 */
function isPolling(worker: Pick<Worker, 'getStatus'>): boolean {
  const status = worker.getStatus();
  return (
    status.runState === 'RUNNING' &&
    status.workflowPollerState === 'POLLING' &&
    status.activityPollerState === 'POLLING'
  );
}

/**
 * Starts refreshing the health file for a worker (call once its `run()` started).
 * @param worker the worker.
 * @param file WORKER_HEALTH_FILE.
 * @param taskQueue its task queue (written into the file).
 * @param onError called when the file cannot be written (logged; the check then fails, as it should).
 * @returns stop: no more refreshes, and the file is removed (a stopped worker is not healthy).
 */
export function startHealthFile(
  worker: Pick<Worker, 'getStatus'>,
  file: string,
  taskQueue: string,
  onError: (err: unknown) => void
): () => void {
  const partial = `${file}.${process.pid}.partial`;
  const refresh = (): void => {
    if (!isPolling(worker)) return;
    const record: HealthRecord = { at: new Date().toISOString(), pid: process.pid, taskQueue };
    try {
      writeFileSync(partial, `${JSON.stringify(record)}\n`);
      renameSync(partial, file); // a reader never sees half a file
    } catch (err) {
      onError(err);
    }
  };
  refresh();
  const timer = setInterval(refresh, HEALTH_REFRESH_MS);
  timer.unref();
  return () => {
    clearInterval(timer);
    rmSync(file, { force: true });
  };
}

/**
 * Reads the health file.
 * @param file WORKER_HEALTH_FILE.
 * @param now the current time.
 * @returns null when healthy, else why not.
 */
export function workerHealthProblem(file: string, now = Date.now()): string | null {
  let modified: number;
  try {
    modified = statSync(file).mtimeMs;
    JSON.parse(readFileSync(file, 'utf8')) as HealthRecord;
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    return code === 'ENOENT'
      ? `no health file ${file}: the worker is not running or has not started polling`
      : `unreadable health file ${file}: ${(err as Error).message}`;
  }
  const age = now - modified;
  if (age > HEALTH_STALE_MS)
    return `health file ${file} is ${Math.round(age / 1000)} s old: the worker stopped polling (or its process is stuck)`;
  return null;
}
