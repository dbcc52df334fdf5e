/**
 * One deadline per request (lib/requestDeadline.ts): the clock bounds the request's whole work, several calls
 * together, and does not count the waits run outside it. The real outage (a database hung with SIGSTOP) is in
 * test/scripts/selfHealing.test.ts.
 */
import { DeadlineExceededError } from '../../lib/deadline';
import { outsideRequestDeadline, withRequestDeadline } from '../../lib/requestDeadline';

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const never = (): Promise<never> => new Promise<never>(() => undefined);

it('work that never answers fails with DeadlineExceededError', async () => {
  await expect(withRequestDeadline(50, never)).rejects.toBeInstanceOf(DeadlineExceededError);
});

it('several calls share one budget: each within it alone, together past it', async () => {
  // Three calls of 40 each fit a per-call bound of 50, not one request bound of 50.
  const work = async (): Promise<string> => {
    for (let i = 0; i < 3; i++) await sleep(40);
    return 'done';
  };
  await expect(withRequestDeadline(50, work)).rejects.toBeInstanceOf(DeadlineExceededError);
  await expect(withRequestDeadline(5000, work)).resolves.toBe('done');
});

it('a wait run outside the deadline is not counted; the clock runs again after it', async () => {
  const paused = withRequestDeadline(50, async () => {
    await outsideRequestDeadline(() => sleep(200));
    return 'answered';
  });
  await expect(paused).resolves.toBe('answered');
  const after = withRequestDeadline(50, async () => {
    await outsideRequestDeadline(() => sleep(10));
    await never();
  });
  await expect(after).rejects.toBeInstanceOf(DeadlineExceededError);
});

it('a response that started is no longer bounded', async () => {
  let started = false;
  const work = async (): Promise<string> => {
    started = true;
    await sleep(150);
    return 'streamed';
  };
  await expect(withRequestDeadline(50, work, () => !started)).resolves.toBe('streamed');
});

it('outside any request a wait just runs', async () => {
  await expect(outsideRequestDeadline(async () => 7)).resolves.toBe(7);
});
