/**
 * The supervisor (scripts/lib/supervisor.ts) with real child processes: restarts with backoff, one line per
 * restart naming the exit code or signal, the backoff reset after a healthy run, the start order, stopping
 * dependents first, and a failed first start.
 */
import { spawnUnit, supervise, type Started, type Unit } from '../../scripts/lib/supervisor';
import { killHard } from '../helpers/processes';
import { until } from '../helpers/until';

const node = (code: string): (() => Promise<Started>) =>
  spawnUnit({ command: process.execPath, args: ['-e', code], env: process.env, graceMs: 2000 });
/** Runs until stopped (SIGTERM ends it: node's default). */
const forever = node('setInterval(() => {}, 1000)');

/** Checks every 20 ms, for up to 10 s, until the condition holds. */
const holds = (check: () => boolean): Promise<boolean> => until(async () => check(), Boolean, 10_000, 20);

it('restarts a child that exits, doubling the wait up to the maximum, one line per restart', async () => {
  const lines: string[] = [];
  const sup = supervise(
    [{ name: 'flaky', start: node('process.exit(3)') }],
    { initialMs: 50, maxMs: 200, healthyMs: 60_000 },
    (l) => lines.push(l)
  );
  await sup.started;
  await holds(() => sup.restarts('flaky') >= 4);
  sup.stop();
  expect(await sup.done).toBe(0);
  expect(lines.slice(0, 4)).toEqual([
    'flaky exited (code 3); restarting in 0.05 s (restart 1)',
    'flaky exited (code 3); restarting in 0.1 s (restart 2)',
    'flaky exited (code 3); restarting in 0.2 s (restart 3)',
    'flaky exited (code 3); restarting in 0.2 s (restart 4)',
  ]);
});

it('a child killed with SIGKILL comes back as a new process; the wait starts over after a healthy run', async () => {
  const lines: string[] = [];
  const sup = supervise([{ name: 'api', start: forever }], { initialMs: 50, maxMs: 5000, healthyMs: 300 }, (l) =>
    lines.push(l)
  );
  await sup.started;
  const first = sup.pid('api')!;
  await killHard(first);
  await holds(() => sup.pid('api') !== undefined && sup.pid('api') !== first);
  const second = sup.pid('api')!;
  // Killed again at once: not healthy yet, so the wait doubles.
  await killHard(second);
  await holds(() => sup.pid('api') !== undefined && sup.pid('api') !== second);
  // Killed after a healthy run: back to the first wait.
  await new Promise((r) => setTimeout(r, 400));
  await killHard(sup.pid('api')!);
  await holds(() => sup.restarts('api') === 3);
  sup.stop();
  expect(await sup.done).toBe(0);
  expect(lines).toEqual([
    'api exited (SIGKILL); restarting in 0.05 s (restart 1)',
    'api exited (SIGKILL); restarting in 0.1 s (restart 2)',
    'api exited (SIGKILL); restarting in 0.05 s (restart 3)',
  ]);
});

it('starts units after the ones they run after, and stops dependents first', async () => {
  const events: string[] = [];
  const unit = (name: string, after: string[] = []): Unit => ({
    name,
    after,
    start: async () => {
      events.push(`start ${name}`);
      const started = await forever();
      return {
        child: started.child,
        stop: async () => {
          // stop() is also called once the process has exited (to release what it held): count real stops.
          if (started.child.exitCode === null && started.child.signalCode === null) events.push(`stop ${name}`);
          await started.stop();
        },
      };
    },
  });
  const sup = supervise(
    [unit('api', ['db']), unit('db', ['storage']), unit('storage')],
    { initialMs: 50, maxMs: 50, healthyMs: 1000 },
    () => undefined
  );
  await sup.started;
  const pids = ['api', 'db', 'storage'].map((n) => sup.pid(n)!);
  sup.stop();
  expect(await sup.done).toBe(0);
  expect(events).toEqual(['start storage', 'start db', 'start api', 'stop api', 'stop db', 'stop storage']);
  for (const pid of pids) expect(() => process.kill(pid, 0)).toThrow();
});

it('a unit that cannot start the first time stops the others and fails the launcher', async () => {
  const sup = supervise(
    [
      { name: 'ok', start: forever },
      {
        name: 'broken',
        start: () => Promise.reject(new Error('port 1 is already in use')),
      },
    ],
    { initialMs: 50, maxMs: 50, healthyMs: 1000 },
    () => undefined
  );
  await expect(sup.started).rejects.toThrow('port 1 is already in use');
  expect(await sup.done).toBe(1);
  expect(sup.pid('ok')).toBeUndefined();
});

it('a unit that cannot restart is tried again with backoff', async () => {
  const lines: string[] = [];
  let starts = 0;
  const sup = supervise(
    [
      {
        name: 'db',
        start: async () => {
          starts++;
          if (starts === 2) throw new Error('port 27017 is already in use');
          return starts === 1 ? node('process.exit(1)')() : forever();
        },
      },
    ],
    { initialMs: 20, maxMs: 1000, healthyMs: 60_000 },
    (l) => lines.push(l)
  );
  await sup.started;
  await holds(() => starts === 3 && sup.pid('db') !== undefined);
  sup.stop();
  expect(await sup.done).toBe(0);
  expect(lines).toEqual([
    'db exited (code 1); restarting in 0.02 s (restart 1)',
    'db could not restart: port 27017 is already in use; next try in 0.04 s',
  ]);
});
