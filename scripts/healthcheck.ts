/**
 * The container health check (docker-compose.yml; docs/operations.md "Production"): `node dist/scripts/healthcheck.js <part>…`
 * exits 0 when every part named is healthy, else 1 with one line per problem on stderr (2: usage).
 *   api     GET /readyz on this process's own port answers 200 (MongoDB and Temporal reachable)
 *   worker  the worker's health file (WORKER_HEALTH_FILE) is fresh: its worker is running and polling
 *           (worker/health.ts); with WORKER_PROCESSES (`npm start`), each worker-only process's file as well
 *           (scripts/lib/healthFiles.ts)
 * A process that serves HTTP and runs a worker is checked with both.
 */
import { loadConfigOrExit } from '../lib/config';
import { workerHealthProblem } from '../worker/health';
import { healthFiles } from './lib/healthFiles';

const API_TIMEOUT_MS = 4_000;

/**
 * @param parts the parts to check.
 * @returns the problems found (none: healthy).
 */
async function problems(parts: string[]): Promise<string[]> {
  const config = loadConfigOrExit();
  const found: string[] = [];
  if (parts.includes('api')) {
    const host = ['0.0.0.0', '::'].includes(config.host) ? '127.0.0.1' : config.host;
    const url = `http://${host.includes(':') ? `[${host}]` : host}:${config.port}/readyz`;
    try {
      const res = await fetch(url, { signal: AbortSignal.timeout(API_TIMEOUT_MS) });
      if (!res.ok) found.push(`api: ${url} answered ${res.status} ${await res.text()}`);
    } catch (err) {
      found.push(`api: ${url}: ${(err as Error).message}`);
    }
  }
  if (parts.includes('worker')) {
    if (!config.workerHealthFile)
      found.push('worker: WORKER_HEALTH_FILE is not set, so the worker writes no health file');
    else
      for (const { unit, file } of healthFiles(config.workerHealthFile, config.workerProcesses)) {
        const problem = workerHealthProblem(file);
        if (problem) found.push(unit === 'service' ? `worker: ${problem}` : `worker (${unit}): ${problem}`);
      }
  }
  return found;
}

const parts = process.argv.slice(2);
if (parts.length === 0 || parts.some((p) => p !== 'api' && p !== 'worker')) {
  process.stderr.write('usage: healthcheck (api | worker)…\n');
  process.exit(2);
}
problems(parts).then(
  (found) => {
    for (const line of found) process.stderr.write(`${line}\n`);
    process.exit(found.length === 0 ? 0 : 1);
  },
  (err: unknown) => {
    process.stderr.write(`healthcheck: ${(err as Error)?.message ?? String(err)}\n`);
    process.exit(1);
  }
);
