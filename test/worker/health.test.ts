/**
 * The container health checks (scripts/healthcheck.ts): a worker's health file is fresh only while its worker runs
 * and polls (worker/health.ts), and the api's check is its /readyz. Real processes, real worker, real servers.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, utimesSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { freePort } from '../../scripts/servers/launch';
import { HEALTH_STALE_MS, startHealthFile, workerHealthProblem } from '../../worker/health';
import { useTestApp } from '../helpers/app';
import { childTestEnv, testConfig } from '../helpers/env';
import { useTestDatabase } from '../helpers/mongo';
import { runScriptAsync, spawnScript } from '../helpers/processes';
import { startTestWorker } from '../helpers/worker';

const db = useTestDatabase();
const t = useTestApp();
const dir = mkdtempSync(path.join(os.tmpdir(), 'aas-health-'));

const healthcheck = (parts: string[], env: Record<string, string>): ReturnType<typeof runScriptAsync> =>
  runScriptAsync('scripts/healthcheck.ts', parts, childTestEnv(env));

/** @returns the age in seconds a stale-file message reports. */
const reportedAge = (stderr: string): number => Number(/ is (\d+) s old/.exec(stderr)?.[1]);

describe('worker health check', () => {
  it('healthy while the worker process polls; SIGTERM removes the file and the check fails', async () => {
    const file = path.join(dir, 'worker.json');
    const taskQueue = `health-${randomBytes(4).toString('hex')}`;
    const worker = spawnScript(
      'worker/index.ts',
      childTestEnv({
        MONGODB_URI: db.uri,
        TEMPORAL_TASK_QUEUE: taskQueue,
        WORKER_HEALTH_FILE: file,
        WORKFLOW_BUNDLE: process.env.AAS_WORKFLOW_BUNDLE!,
      })
    );
    await worker.waitFor(/worker started/, 60_000);
    expect(JSON.parse(readFileSync(file, 'utf8'))).toEqual({
      at: expect.any(String),
      pid: worker.child.pid,
      taskQueue,
    });
    const ok = await healthcheck(['worker'], { WORKER_HEALTH_FILE: file });
    expect(ok).toEqual({ status: 0, stdout: '', stderr: '' });

    worker.child.kill('SIGTERM');
    expect((await worker.exited()).code).toBe(0);
    expect(existsSync(file)).toBe(false);
    const stopped = await healthcheck(['worker'], { WORKER_HEALTH_FILE: file });
    expect(stopped.status).toBe(1);
    expect(stopped.stderr).toBe(
      `worker: no health file ${file}: the worker is not running or has not started polling\n`
    );
  }, 90_000);

  it('a file not refreshed for HEALTH_STALE_MS (a stuck process) fails the check', async () => {
    const file = path.join(dir, 'stuck.json');
    const running = await startTestWorker(testConfig({ TEMPORAL_TASK_QUEUE: `stuck-${Date.now()}` }));
    const stop = startHealthFile(running.worker, file, 'q', (err) => {
      throw err;
    });
    expect(workerHealthProblem(file)).toBeNull();
    const written = readFileSync(file);
    stop();
    await running.stop();
    // What a stuck process leaves: its last file, no longer refreshed.
    writeFileSync(file, written);
    const old = (Date.now() - HEALTH_STALE_MS - 5_000) / 1000;
    utimesSync(file, old, old);
    const stale = await healthcheck(['worker'], { WORKER_HEALTH_FILE: file });
    expect(stale.status).toBe(1);
    expect(stale.stderr).toMatch(/^worker: health file .* is \d+ s old: the worker stopped polling/);
    // The age it reports is at least the one the file was given (more when the check's process starts slowly).
    expect(reportedAge(stale.stderr)).toBeGreaterThanOrEqual(Math.floor(HEALTH_STALE_MS / 1000) + 5);
  });

  it('with WORKER_PROCESSES (npm start), every worker-only process must have its own fresh file', async () => {
    const file = path.join(dir, 'units.json');
    writeFileSync(file, '{}\n'); // the service process's: fresh
    const env = { WORKER_HEALTH_FILE: file, WORKER_PROCESSES: '2' };
    const missing = await healthcheck(['worker'], env);
    expect(missing.status).toBe(1);
    expect(missing.stderr).toBe(
      [`${file}.worker`, `${file}.worker-2`]
        .map(
          (f, i) =>
            `worker (${i === 0 ? 'worker' : 'worker-2'}): no health file ${f}: the worker is not running or has not started polling\n`
        )
        .join('')
    );
    writeFileSync(`${file}.worker`, '{}\n');
    writeFileSync(`${file}.worker-2`, '{}\n');
    expect(await healthcheck(['worker'], env)).toEqual({ status: 0, stdout: '', stderr: '' });
    const old = (Date.now() - HEALTH_STALE_MS - 5_000) / 1000;
    utimesSync(`${file}.worker-2`, old, old); // one stuck worker-only process, the others polling
    const stale = await healthcheck(['worker'], env);
    expect(stale.status).toBe(1);
    expect(stale.stderr).toMatch(/^worker \(worker-2\): health file .*units\.json\.worker-2 is \d+ s old/);
    expect(reportedAge(stale.stderr)).toBeGreaterThanOrEqual(Math.floor(HEALTH_STALE_MS / 1000) + 5);
  });

  it('a worker that is not running and polling writes nothing', async () => {
    const file = path.join(dir, 'stopped.json');
    const running = await startTestWorker(testConfig({ TEMPORAL_TASK_QUEUE: `stopped-${Date.now()}` }));
    await running.stop(); // shut down and drained: its pollers no longer poll
    const stop = startHealthFile(running.worker, file, 'q', (err) => {
      throw err;
    });
    expect(existsSync(file)).toBe(false);
    stop();
  });

  it('WORKER_HEALTH_FILE unset: the worker check fails, saying so', async () => {
    const res = await healthcheck(['worker'], { WORKER_HEALTH_FILE: '' });
    expect(res.status).toBe(1);
    expect(res.stderr).toBe('worker: WORKER_HEALTH_FILE is not set, so the worker writes no health file\n');
  });
});

describe('api health check', () => {
  it('passes when /readyz on the configured port is ready, fails when nothing answers there', async () => {
    const port = new URL(await t.listen()).port;
    expect(await healthcheck(['api'], { PORT: port, HOST: '0.0.0.0' })).toEqual({ status: 0, stdout: '', stderr: '' });
    const closed = String(await freePort());
    const res = await healthcheck(['api'], { PORT: closed });
    expect(res.status).toBe(1);
    expect(res.stderr).toMatch(new RegExp(`^api: http://127\\.0\\.0\\.1:${closed}/readyz: fetch failed`));
    const usage = await healthcheck([], {});
    expect(usage.status).toBe(2);
  });
});
