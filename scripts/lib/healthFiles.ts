/**
 * The worker health files of the processes `npm start` runs [docs/decisions.md "Health of a worker"]: the service
 * process writes WORKER_HEALTH_FILE itself and each worker-only process `<WORKER_HEALTH_FILE>.<its name>`, so that
 * one process still polling cannot hide another that stopped. The health check (scripts/healthcheck.ts) reads the
 * same list from the same settings (WORKER_PROCESSES), so it expects exactly the files of the processes started.
 */
import { workerNames } from './supervisor';

/**
 * @param base WORKER_HEALTH_FILE.
 * @param workerProcesses WORKER_PROCESSES (0: a process alone, as each compose service runs).
 * @returns each process's name and health file, the service process first.
 */
export function healthFiles(base: string, workerProcesses: number): { unit: string; file: string }[] {
  return [
    { unit: 'service', file: base },
    ...workerNames(workerProcesses).map((unit) => ({ unit, file: `${base}.${unit}` })),
  ];
}
