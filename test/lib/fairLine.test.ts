/**
 * lib/fairLine.ts on its own (the choice of the next request and of the request a full line gives up), and
 * lib/executionAdmission.ts sharing its slots between organizations with it. The HTTP behaviour of admission is
 * test/api/v1/executionAdmission.test.ts; the latency figure is the benchmark's (npm run bench:fairness).
 */
import { OverloadedError } from '../../lib/errors';
import { ExecutionAdmission, type AdmissionSlot } from '../../lib/executionAdmission';
import { FairLine } from '../../lib/fairLine';

interface Req {
  organizationId: string;
  weight: number;
  name: string;
}
const req = (organizationId: string, name: string, weight = 1): Req => ({ organizationId, weight, name });

describe('FairLine', () => {
  it('one organization: first come first served', () => {
    const line = new FairLine<Req>();
    for (const n of ['a1', 'a2', 'a3']) line.push(req('A', n));
    const order: string[] = [];
    for (let next = line.peek(() => 0); next; next = line.peek(() => 0)) {
      order.push(next.name);
      line.remove(next);
    }
    expect(order).toEqual(['a1', 'a2', 'a3']);
    expect(line.size).toBe(0);
  });

  it('a free slot goes to the organization running the fewest, whatever the order of arrival', () => {
    const line = new FairLine<Req>();
    for (let i = 1; i <= 5; i++) line.push(req('A', `a${i}`));
    line.push(req('B', 'b1'));
    const running = new Map([['A', 4]]);
    expect(line.peek((o) => running.get(o) ?? 0)!.name).toBe('b1');
    // Both running as many: the older request first.
    running.set('B', 4);
    expect(line.peek((o) => running.get(o) ?? 0)!.name).toBe('a1');
  });

  it('weights: an organization of weight 2 gets two slots for one of weight 1', () => {
    const line = new FairLine<Req>();
    for (let i = 0; i < 30; i++) {
      line.push(req('A', `a${i}`, 2));
      line.push(req('B', `b${i}`, 1));
    }
    const running = new Map<string, number>();
    for (let slot = 0; slot < 9; slot++) {
      const next = line.peek((o) => running.get(o) ?? 0)!;
      line.remove(next);
      running.set(next.organizationId, (running.get(next.organizationId) ?? 0) + 1);
    }
    expect(Object.fromEntries(running)).toEqual({ A: 6, B: 3 });
  });

  it('a full line gives up the newest request of the largest organization, only when that evens the shares', () => {
    const line = new FairLine<Req>();
    for (let i = 1; i <= 4; i++) line.push(req('A', `a${i}`));
    line.push(req('B', 'b1'));
    expect(line.evictionFor('C')!.name).toBe('a4');
    expect(line.evictionFor('B')!.name).toBe('a4');
    // A itself, or an organization with nearly as many waiting: nothing to gain.
    expect(line.evictionFor('A')).toBeUndefined();
    line.push(req('B', 'b2'));
    line.push(req('B', 'b3'));
    expect(line.evictionFor('B')).toBeUndefined();
    expect([line.organizations, line.largest, line.waitingOf('B')]).toEqual([2, 4, 3]);
  });

  it('remove is idempotent and drops an emptied organization', () => {
    const line = new FairLine<Req>();
    const r = req('A', 'a1');
    line.push(r);
    expect(line.remove(r)).toBe(true);
    expect(line.remove(r)).toBe(false);
    expect([line.size, line.organizations, line.all()]).toEqual([0, 0, []]);
  });
});

describe('ExecutionAdmission between organizations', () => {
  const opened: ExecutionAdmission[] = [];
  afterEach(() => opened.splice(0).forEach((a) => a.close()));
  function admission(concurrency: number, queue: number, weights: Record<string, number> = {}, headroom = 0) {
    const a = new ExecutionAdmission(
      { concurrency, queue, waitMs: 60_000, holdMs: 600_000, headroom },
      async () => [],
      () => undefined,
      async (org) => weights[org] ?? 1
    );
    opened.push(a);
    return a;
  }
  const tick = (): Promise<void> => new Promise((r) => setImmediate(r));
  /** @returns the promise's state after the pending callbacks ran. */
  async function settled<T>(p: Promise<T>): Promise<'pending' | 'resolved' | 'rejected'> {
    let state: 'pending' | 'resolved' | 'rejected' = 'pending';
    p.then(
      () => (state = 'resolved'),
      () => (state = 'rejected')
    );
    await tick();
    return state;
  }

  it("one organization's burst does not keep another waiting behind it", async () => {
    const a = admission(2, 100);
    const held = [await a.acquire(undefined, 'A'), await a.acquire(undefined, 'A')];
    const admitted: string[] = [];
    const track = (org: string, name: string): Promise<AdmissionSlot> =>
      a.acquire(undefined, org).then((s) => {
        admitted.push(name);
        return s;
      });
    const burst = Array.from({ length: 20 }, (_, i) => track('A', `a${i}`));
    await tick();
    const b = track('B', 'b');
    await tick();
    expect(a.waiting).toBe(21);
    held[0].release();
    await tick();
    expect(admitted).toEqual(['b']);
    expect([a.runningOf('A'), a.runningOf('B')]).toEqual([1, 1]);
    (await b).release();
    held[1].release();
    await tick();
    expect(admitted).toEqual(['b', 'a0', 'a1']);
    for (const s of await Promise.all(burst.slice(0, 2))) s.release();
    a.close();
    await Promise.allSettled(burst);
  });

  it('a full line refuses the flooding organization, not the newcomer: 503 with Retry-After (fair_share)', async () => {
    const a = admission(1, 3);
    await a.acquire(undefined, 'A');
    // Each outcome is taken as it comes (a refusal is a rejection).
    const waiting = [1, 2, 3].map(() => a.acquire(undefined, 'A').catch((e: unknown) => e));
    await tick();
    const full = await a.acquire(undefined, 'A').catch((e: unknown) => e);
    expect(full).toBeInstanceOf(OverloadedError);
    const b = a.acquire(undefined, 'B').catch((e: unknown) => e);
    await tick();
    const evicted = await waiting[2];
    expect(evicted).toBeInstanceOf(OverloadedError);
    expect(Number((evicted as OverloadedError).headers['retry-after'])).toBeGreaterThanOrEqual(1);
    expect([a.waiting, a.organizationsWaiting, a.largestLine]).toEqual([3, 2, 2]);
    a.close();
    await Promise.allSettled([...waiting, b]);
  });

  it('the headroom: an organization holding its share leaves the last free slots to another, which takes one at once', async () => {
    const a = admission(10, 100, {}, 2);
    // Alone, A takes every slot, the headroom's included.
    const heldA = await Promise.all(Array.from({ length: 10 }, () => a.acquire(undefined, 'A')));
    // Each outcome is taken as it comes (the close at the end refuses the rest).
    const flood = Array.from({ length: 20 }, () => a.acquire(undefined, 'A').catch((e: unknown) => e));
    await tick();
    const b1 = a.acquire(undefined, 'B');
    await tick();
    heldA[0].release();
    await tick();
    expect(await settled(b1)).toBe('resolved');
    // A holds 9 of B's and its 2 organizations' 5 each: the next two slots that come back stay free.
    heldA[1].release();
    heldA[2].release();
    await tick();
    expect([a.admitted, a.waiting, a.runningOf('A')]).toEqual([8, 20, 7]);
    // B's next request takes one at once, although A's wait in line.
    const b2 = a.acquire(undefined, 'B');
    expect(await settled(b2)).toBe('resolved');
    expect([a.admitted, a.runningOf('B')]).toEqual([9, 2]);
    // B done: A alone again takes every slot.
    (await b1).release();
    (await b2).release();
    await tick();
    expect([a.admitted, a.waiting, a.runningOf('A')]).toEqual([10, 17, 10]);
    a.close();
    await Promise.allSettled(flood);
  });
});
