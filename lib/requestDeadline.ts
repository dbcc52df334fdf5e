/**
 * One deadline for a whole request [docs/decisions.md "One deadline per request"]. Each call to MongoDB or Temporal
 * has its own bound (server selection, a call deadline), but a request makes several, and a database that hangs with
 * its connections open answers none of them: bounding each call let a request take the sum of its calls' bounds
 * (6.2 s seen), past the 503-within-5-s promise. The api runs every request under one clock (REQUEST_DEADLINE_MS):
 * when it runs out first, the request fails with DeadlineExceededError, which the error middleware answers 503.
 *
 * Waits that are not a dependency's answer and are bounded otherwise (a model reply followed by the Temporal watch,
 * an upload's bytes, a data query under its own timeout) run with the clock paused ({@link outsideRequestDeadline}),
 * so the deadline only ever measures the request's own work and its dependencies.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { DeadlineExceededError } from './deadline';

/** The running clock of one request. */
class RequestClock {
  private left: number;
  private since = 0;
  private pauses = 0;
  private timer?: NodeJS.Timeout;
  private stopped = false;

  constructor(
    ms: number,
    private readonly expire: () => void
  ) {
    this.left = ms;
    this.arm();
  }

  private arm(): void {
    this.since = Date.now();
    this.timer = setTimeout(this.expire, Math.max(0, this.left));
  }

  pause(): void {
    if (this.pauses++ > 0 || this.stopped) return;
    clearTimeout(this.timer);
    this.left -= Date.now() - this.since;
  }

  resume(): void {
    if (--this.pauses > 0 || this.stopped) return;
    this.arm();
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
  }

  remaining(): number {
    if (this.stopped) return 0;
    return this.pauses > 0 ? this.left : this.left - (Date.now() - this.since);
  }
}

const clocks = new AsyncLocalStorage<RequestClock>();

/**
 * Runs a request's work under one deadline.
 * @param ms the time the work gets (paused time not counted).
 * @param work the request's work.
 * @param stillBounded asked when the time is up: false when the request can no longer be answered with an error
 *   (its response has started), and the work then goes on unbounded.
 * @returns the work's result.
 * @throws DeadlineExceededError when the time ran out first.
 */
export async function withRequestDeadline<T>(
  ms: number,
  work: () => Promise<T>,
  stillBounded: () => boolean = () => true
): Promise<T> {
  let fail: (err: Error) => void = () => undefined;
  const expired = new Promise<never>((_, reject) => (fail = reject));
  const clock = new RequestClock(ms, () => {
    clock.stop();
    if (stillBounded()) fail(new DeadlineExceededError('the request', ms));
  });
  try {
    return await Promise.race([clocks.run(clock, work), expired]);
  } finally {
    clock.stop();
  }
}

/**
 * @param ms the bound of the call (all of it outside a request).
 * @param reserveMs time kept back from the request's deadline for the caller's clean-up after the call failed.
 * @returns the time a call may take: `ms`, or less when the running request's deadline (less `reserveMs`) comes
 *   first, so that a call whose driver retries past its own deadline is abandoned, and cleaned up after, before the
 *   request is answered 503.
 */
export function callTimeLeft(ms: number, reserveMs = 0): number {
  const clock = clocks.getStore();
  return clock ? Math.max(0, Math.min(ms, clock.remaining() - reserveMs)) : ms;
}

/**
 * Runs a wait that the request's deadline does not measure (it is bounded by its own timeout or watch). Outside a
 * request (a worker's activity) it just runs.
 * @param work the wait.
 * @returns its result.
 */
export async function outsideRequestDeadline<T>(work: () => Promise<T>): Promise<T> {
  const clock = clocks.getStore();
  clock?.pause();
  try {
    return await work();
  } finally {
    clock?.resume();
  }
}

/**
 * Starts work that outlives the request (the reply of an execution begun by its start: activities/executionRun.ts):
 * the request's deadline does not reach it, as it would not reach the worker's activity it stands for.
 * @param work the work (started now, synchronously).
 * @returns what it returns.
 */
export function detachedFromRequestDeadline<T>(work: () => T): T {
  return clocks.exit(work);
}
