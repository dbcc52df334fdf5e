/**
 * lib/sharedCache.ts on its own: lifetime, groups, the read that races an invalidation, and invalidations arriving
 * as datagrams (lib/wakeups.ts). Across real api processes: test/api/liveEvents.test.ts.
 */
import dgram from 'node:dgram';
import { configureCaches, invalidate, SharedCache } from '../../lib/sharedCache';
import { WakeupReceiver } from '../../lib/wakeups';
import { useTestDatabase } from '../helpers/mongo';

useTestDatabase(); // where receivers register and senders find them

let n = 0;
const fresh = (): SharedCache<string> => new SharedCache<string>(`test-${++n}`);
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

beforeEach(() => configureCaches(1000));
afterAll(() => configureCaches(0));

function counter(
  value: string,
  group = 'org_a'
): { load: () => Promise<{ value: string; group: string }>; calls: () => number } {
  let calls = 0;
  return {
    load: async () => {
      calls++;
      return { value: `${value}${calls}`, group };
    },
    calls: () => calls,
  };
}

it('keeps a value for its lifetime, then reads it again', async () => {
  configureCaches(80);
  const cache = fresh();
  const c = counter('v');
  expect(await cache.get('k', c.load)).toBe('v1');
  expect(await cache.get('k', c.load)).toBe('v1');
  expect(c.calls()).toBe(1);
  await sleep(100);
  expect(await cache.get('k', c.load)).toBe('v2');
});

it('holds at most its entries, and lets expired ones go as others come in', async () => {
  configureCaches(50);
  const cache = new SharedCache<string>(`test-${++n}`, 3);
  const load = async (): Promise<{ value: string; group: string }> => ({ value: 'v', group: 'org_a' });
  for (const key of ['a', 'b', 'c', 'd', 'e']) await cache.get(key, load);
  expect(cache.size).toBe(3);
  await sleep(70);
  await cache.get('f', load);
  expect(cache.size).toBe(1);
});

it('an invalidation clears its group in this process at once, and only that group', async () => {
  const cache = fresh();
  const a = counter('a', 'org_a');
  const b = counter('b', 'org_b');
  await cache.get('ka', a.load);
  await cache.get('kb', b.load);
  await invalidate(cache.name, 'org_a');
  expect(await cache.get('ka', a.load)).toBe('a2');
  expect(await cache.get('kb', b.load)).toBe('b1');
});

it('a read that started before an invalidation does not keep what it read', async () => {
  const cache = fresh();
  let release!: () => void;
  const slow = cache.get('k', async () => {
    await new Promise<void>((r) => (release = r));
    return { value: 'stale', group: 'org_a' };
  });
  await sleep(5);
  await invalidate(cache.name, 'org_a');
  release();
  expect(await slow).toBe('stale'); // the caller that asked before the write gets what it read
  const c = counter('fresh');
  expect(await cache.get('k', c.load)).toBe('fresh1'); // but nobody after it
});

it('concurrent misses of one key share one read; a miss after an invalidation does not join a read from before it', async () => {
  const cache = fresh();
  let calls = 0;
  let release!: () => void;
  const gate = (): Promise<void> => new Promise<void>((r) => (release = r));
  const load = async (): Promise<{ value: string; group: string }> => {
    const n = ++calls;
    await gate();
    return { value: `v${n}`, group: 'org_a' };
  };
  // Twenty requests find the key missing at once: one read, every one gets its value.
  const together = Array.from({ length: 20 }, () => cache.get('k', load));
  await sleep(5);
  release();
  expect(await Promise.all(together)).toEqual(Array.from({ length: 20 }, () => 'v1'));
  expect(calls).toBe(1);
  expect(await cache.get('k', load)).toBe('v1'); // kept

  // A read under way when the group is invalidated: a request after the invalidation reads again (its own write).
  await invalidate(cache.name, 'org_a');
  const before = cache.get('k', load);
  await sleep(5);
  const releaseBefore = release;
  await invalidate(cache.name, 'org_a');
  const after = cache.get('k', load);
  await sleep(5);
  releaseBefore();
  release();
  expect(await before).toBe('v2');
  expect(await after).toBe('v3');
  expect(calls).toBe(3);

  // A failed read fails the requests that shared it, and the next request reads again.
  let fail = true;
  const failing = async (): Promise<{ value: string; group: string }> => {
    calls++;
    await sleep(5);
    if (fail) throw new Error('database away');
    return { value: 'back', group: 'org_a' };
  };
  const shared = [cache.get('f', failing), cache.get('f', failing)];
  await expect(Promise.all(shared)).rejects.toThrow('database away');
  fail = false;
  expect(await cache.get('f', failing)).toBe('back');
  expect(calls).toBe(5);
});

it('keeps no refusal and no miss', async () => {
  const cache = fresh();
  let calls = 0;
  const refused = async (): Promise<{ value: string; group: string; keep: boolean }> => {
    calls++;
    return { value: 'refused', group: 'org_a', keep: false };
  };
  await cache.get('k', refused);
  await cache.get('k', refused);
  expect(calls).toBe(2);
  let misses = 0;
  const none = async (): Promise<undefined> => {
    misses++;
    return undefined;
  };
  expect(await cache.get('m', none)).toBeUndefined();
  await cache.get('m', none);
  expect(misses).toBe(2);
});

it('a lifetime of 0 turns the cache off', async () => {
  configureCaches(0);
  const cache = fresh();
  const c = counter('v');
  await cache.get('k', c.load);
  await cache.get('k', c.load);
  expect(c.calls()).toBe(2);
  // Off, concurrent misses each read too.
  await Promise.all([cache.get('k', c.load), cache.get('k', c.load)]);
  expect(c.calls()).toBe(4);
});

it('an invalidation datagram from another process clears the group; a garbled or unknown one changes nothing', async () => {
  const cache = fresh();
  const c = counter('v');
  const receiver = new WakeupReceiver(null); // invalidations only, as the worker registers
  const port = await receiver.start('127.0.0.1', '127.0.0.1');
  const socket = dgram.createSocket('udp4');
  const send = (payload: string): Promise<void> =>
    new Promise((resolve) => socket.send(Buffer.from(payload), port, '127.0.0.1', () => resolve()));
  try {
    await cache.get('k', c.load);
    for (const junk of ['not json', '{"c":"auth:org_a"}', '{"c":[42]}', '{"s":[],"c":["nocache:org_a"]}']) {
      await send(junk);
    }
    await send(JSON.stringify({ s: [], c: [`${cache.name}:org_b`] })); // another group
    await sleep(50);
    expect(await cache.get('k', c.load)).toBe('v1');
    await send(JSON.stringify({ s: [], c: [`${cache.name}:org_a`] }));
    await sleep(50);
    expect(await cache.get('k', c.load)).toBe('v2');
  } finally {
    socket.close();
    await receiver.stop();
  }
});
