/**
 * Small random draws from a pool (lib/randomPool.ts): the payload codec's IVs and the random part of ids. Every
 * draw is bytes of the CSPRNG that no other draw got, and a draw stays what it was after the pool is filled again.
 */
import { pooledRandomBytes } from '../../lib/randomPool';
import { randomBase62 } from '../../lib/ids';

it('hands out bytes no other draw got, across refills, and never changes a draw it handed out', () => {
  const first = pooledRandomBytes(12);
  const copy = Buffer.from(first);
  const seen = new Set<string>();
  // 20,000 draws of 12 bytes: about 60 fills of the pool.
  for (let i = 0; i < 20_000; i++) {
    const iv = pooledRandomBytes(12);
    expect(iv).toHaveLength(12);
    seen.add(iv.toString('hex'));
  }
  expect(seen.size).toBe(20_000);
  expect(first.equals(copy)).toBe(true);
  // Draws of odd sizes that do not divide the pool: each whole, none overlapping the next.
  const a = pooledRandomBytes(1000);
  const b = pooledRandomBytes(1000);
  expect(a).toHaveLength(1000);
  expect(a.equals(b)).toBe(false);
});

it('is random: the bytes of many draws spread over every value', () => {
  const counts = new Array<number>(256).fill(0);
  for (let i = 0; i < 4000; i++) for (const byte of pooledRandomBytes(16)) counts[byte]++;
  // 64,000 bytes: about 250 of each value; a pool of zeros or a repeated block would fail this.
  expect(Math.min(...counts)).toBeGreaterThan(150);
  expect(Math.max(...counts)).toBeLessThan(350);
  // Large draws go to the generator directly.
  expect(pooledRandomBytes(10_000)).toHaveLength(10_000);
});

it('ids stay random base62 drawn from it', () => {
  const ids = new Set(Array.from({ length: 5000 }, () => randomBase62(16)));
  expect(ids.size).toBe(5000);
  for (const id of ids) expect(id).toMatch(/^[0-9A-Za-z]{16}$/);
});
