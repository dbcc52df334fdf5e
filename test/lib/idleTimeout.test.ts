/** The model call's idle timeout (lib/providers/idle.ts), on real timers. */
import { withIdleTimeout } from '../../lib/providers/idle';
import { ProviderIdleError } from '../../lib/providers';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function* paced(gaps: number[]): AsyncGenerator<number> {
  for (const [i, gap] of gaps.entries()) {
    await sleep(gap);
    yield i;
  }
}

async function collect<T>(it: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const v of it) out.push(v);
  return out;
}

it('passes every event through when no silence reaches the limit, however long the whole stream', async () => {
  let aborted = 0;
  // 12 gaps of 40 ms: 480 ms in all, past the 150 ms limit, never 150 ms between two events.
  const got = await collect(withIdleTimeout(paced(Array(12).fill(40)), 150, () => aborted++));
  expect(got).toEqual([...Array(12).keys()]);
  expect(aborted).toBe(0);
});

it('fails with ProviderIdleError and aborts once when the source goes silent mid-stream', async () => {
  let aborted = 0;
  const got: number[] = [];
  const run = (async () => {
    for await (const v of withIdleTimeout(paced([5, 5, 400]), 100, () => aborted++)) got.push(v);
  })();
  await expect(run).rejects.toBeInstanceOf(ProviderIdleError);
  expect(got).toEqual([0, 1]);
  expect(aborted).toBe(1);
});

it('does not count the consumer’s own time between reads as silence', async () => {
  let aborted = 0;
  const got: number[] = [];
  for await (const v of withIdleTimeout(paced([5, 5, 5]), 80, () => aborted++)) {
    got.push(v);
    await sleep(200); // the consumer is slow; the source is not silent
  }
  expect(got).toEqual([0, 1, 2]);
  expect(aborted).toBe(0);
});

it('leaves no timer behind when the consumer stops early', async () => {
  const gen = withIdleTimeout(paced([5, 5, 5, 5]), 60, () => undefined);
  expect((await gen.next()).value).toBe(0);
  await gen.return(undefined);
  // Had the timer stayed armed it would call a stale handler; the stream is closed, nothing is pending.
  await sleep(100);
  expect((await gen.next()).done).toBe(true);
});
