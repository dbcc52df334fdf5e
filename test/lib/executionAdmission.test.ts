/**
 * lib/executionAdmission.ts on its own: first come first served, the line's bound and the wait's, a client that
 * leaves, the ways a slot comes back (release, the execution's end in this process, the sweep for an execution that
 * ended elsewhere, the hold cap), and shutdown. The HTTP behaviour is test/api/v1/executionAdmission.test.ts.
 */
import { AppError, OverloadedError, ServiceUnavailableError } from '../../lib/errors';
import {
  ExecutionAdmission,
  executionEnded,
  executionQueued,
  readmitQueued,
  type AdmissionLimits,
} from '../../lib/executionAdmission';
import { registerRunningCall } from '../../lib/runningCalls';
import { until } from '../helpers/until';

const opened: ExecutionAdmission[] = [];
afterEach(() => opened.splice(0).forEach((a) => a.close()));

function admission(limits: Partial<AdmissionLimits> = {}, ended = async (_ids: string[]): Promise<string[]> => []) {
  const a = new ExecutionAdmission({ concurrency: 1, queue: 10, waitMs: 60_000, holdMs: 600_000, ...limits }, ended);
  opened.push(a);
  return a;
}

/** @returns the promise's state after the pending callbacks ran. */
async function settled<T>(p: Promise<T>): Promise<'pending' | 'resolved' | 'rejected'> {
  let state: 'pending' | 'resolved' | 'rejected' = 'pending';
  p.then(
    () => (state = 'resolved'),
    () => (state = 'rejected')
  );
  await new Promise((r) => setImmediate(r));
  return state;
}

it('admits up to its bound at once; the others wait and are admitted in the order they came', async () => {
  const a = admission({ concurrency: 2 });
  const s1 = await a.acquire();
  const s2 = await a.acquire();
  const w = [a.acquire(), a.acquire(), a.acquire()];
  expect([a.admitted, a.waiting]).toEqual([2, 3]);
  expect(await Promise.all(w.map(settled))).toEqual(['pending', 'pending', 'pending']);
  s2.release();
  expect(await Promise.all(w.map(settled))).toEqual(['resolved', 'pending', 'pending']);
  // A second release of the same slot frees nothing.
  s2.release();
  expect(await Promise.all(w.map(settled))).toEqual(['resolved', 'pending', 'pending']);
  s1.release();
  expect(await Promise.all(w.map(settled))).toEqual(['resolved', 'resolved', 'pending']);
  (await w[0]).release();
  expect(await settled(w[2])).toBe('resolved');
  expect([a.admitted, a.waiting]).toEqual([2, 0]);
});

it('a full line refuses at once, and a wait that runs out is refused: 503 with Retry-After', async () => {
  const a = admission({ queue: 1, waitMs: 50 });
  await a.acquire();
  const waiter = a.acquire();
  const full = await a.acquire().catch((e: unknown) => e);
  expect(full).toBeInstanceOf(OverloadedError);
  expect((full as OverloadedError).status).toBe(503);
  expect(Number((full as OverloadedError).headers['retry-after'])).toBeGreaterThanOrEqual(1);
  const late = await waiter.catch((e: unknown) => e);
  expect(late).toBeInstanceOf(OverloadedError);
  expect([a.admitted, a.waiting]).toEqual([1, 0]);
});

it('with no line (EXECUTION_QUEUE=0) a request past the bound is refused at once', async () => {
  const a = admission({ queue: 0 });
  await a.acquire();
  await expect(a.acquire()).rejects.toBeInstanceOf(OverloadedError);
});

it('a client that goes away leaves the line; the next one in line gets the slot', async () => {
  const a = admission();
  const s = await a.acquire();
  const gone = new AbortController();
  const first = a.acquire(gone.signal);
  const second = a.acquire();
  gone.abort();
  const err = await first.catch((e: unknown) => e);
  expect(err).toBeInstanceOf(AppError);
  expect((err as AppError).code).toBe('request_aborted');
  expect(a.waiting).toBe(1);
  s.release();
  expect(await settled(second)).toBe('resolved');
});

it('the end of an execution in this process frees the slot named after it', async () => {
  const a = admission();
  const s = await a.acquire();
  s.bind('exec_ended_here');
  const next = a.acquire();
  executionEnded('exec_other');
  expect(await settled(next)).toBe('pending');
  executionEnded('exec_ended_here');
  expect(await settled(next)).toBe('resolved');
});

it('an execution that ended in another process is found by the sweep; one whose reply runs here is not asked about', async () => {
  const asked: string[][] = [];
  const ended = new Set<string>();
  const a = admission({ concurrency: 2 }, async (ids) => {
    asked.push(ids);
    return ids.filter((id) => ended.has(id));
  });
  const elsewhere = await a.acquire();
  elsewhere.bind('exec_elsewhere');
  const here = await a.acquire();
  here.bind('exec_here');
  const unregister = registerRunningCall('exec_here', new AbortController());
  try {
    const next = a.acquire();
    await until(
      async () => asked.length,
      (n) => n > 0,
      10_000,
      50
    );
    expect(asked.flat()).toEqual(['exec_elsewhere']);
    expect(await settled(next)).toBe('pending');
    ended.add('exec_elsewhere');
    await next;
    expect(asked.flat()).not.toContain('exec_here');
  } finally {
    unregister();
  }
}, 30_000);

it('a queued execution gives its slot back while it waits, and takes one again in line, once (a retried claim joins it)', async () => {
  const a = admission({ concurrency: 2 });
  const queued = await a.acquire(undefined, 'A');
  queued.bind('exec_queued');
  const holder = await a.acquire(undefined, 'B');
  holder.bind('exec_holder');
  // It waits for its key: its slot is free for another request.
  executionQueued('exec_queued');
  expect(a.admitted).toBe(1);
  const other = await a.acquire(undefined, 'C');
  // Its key frees: it takes a slot again behind nobody's turn but its own; a retried claim waits for the same one.
  const first = readmitQueued('exec_queued', 'A');
  const retried = readmitQueued('exec_queued', 'A');
  expect([await settled(first), a.waiting]).toEqual(['pending', 1]);
  other.release();
  await Promise.all([first, retried]);
  expect([a.admitted, a.waiting, a.runningOf('A')]).toEqual([2, 0, 1]);
  // Once it holds one, another claim takes none; a late `queued` event gives the one it took again not back.
  await readmitQueued('exec_queued', 'A');
  executionQueued('exec_queued');
  expect(a.admitted).toBe(2);
  // Its end gives it back.
  executionEnded('exec_queued');
  expect([a.admitted, a.runningOf('A')]).toEqual([1, 0]);
  holder.release();
});

it('a re-admission is never refused: past its bound it takes a slot over the limit', async () => {
  const a = admission({ concurrency: 1, queue: 0 });
  const s = await a.acquire();
  await readmitQueued('exec_waited', 'A', 50);
  expect(a.admitted).toBe(2);
  executionEnded('exec_waited');
  expect(a.admitted).toBe(1);
  s.release();
});

it('a slot is given back at the latest after holdMs, whatever became of its execution', async () => {
  const a = admission({ holdMs: 10 });
  const s = await a.acquire();
  s.bind('exec_lost');
  expect(a.admitted).toBe(1);
  // The one slot is held by an execution nobody reports as ended: the next request waits until the hold cap frees it.
  const next = a.acquire();
  expect(await settled(next)).toBe('pending');
  expect(a.waiting).toBe(1);
  const second = await next;
  expect(second).toBeDefined();
  expect([a.admitted, a.waiting]).toEqual([1, 0]); // the lost slot is gone, the new one holds the only place
});

it('at shutdown the requests in line are answered 503', async () => {
  const a = admission();
  await a.acquire();
  const waiter = a.acquire();
  a.close();
  await expect(waiter).rejects.toBeInstanceOf(ServiceUnavailableError);
  await expect(a.acquire()).rejects.toBeInstanceOf(ServiceUnavailableError);
});
