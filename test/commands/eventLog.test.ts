import { expiryFields } from '../../lib/expiry';
import {
  appendEvents,
  CoalescingWriter,
  eventKey,
  EventTailer,
  insertEvents,
  lastSeq,
  readEvents,
  readWritten,
  type LoggedEvent,
} from '../../commands/eventLog';
import { raiseHead } from '../../commands/streamHeads';
import { Execution, StreamEvent, StreamHead } from '../../models';
import { useTestDatabase } from '../helpers/mongo';

useTestDatabase();

const delta = (text: string): Omit<LoggedEvent, 'seq'> => ({ event: 'message', data: { text } });
const until = async (cond: () => boolean, timeoutMs = 5000): Promise<void> => {
  const deadline = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 10));
  }
};

describe('event log', () => {
  it("an execution's stream keeps its head on its record; one recorded before reads it from stream_heads", async () => {
    // Recorded with a stored `meta` (before `metaOnRecord`): `streamSeq` 0 until an append past `meta` raises it
    // (commands/streamHeads.ts).
    await Execution.collection.insertOne({ _id: 'exec-new', streamSeq: 0 } as never);
    await appendEvents('exec-new', [{ seq: 1, event: 'meta', data: {} }]);
    expect(await lastSeq('exec-new')).toBe(1);
    await appendEvents('exec-new', [{ seq: 2, event: 'message', data: { text: 'a' } }]);
    expect((await Execution.collection.findOne({ _id: 'exec-new' } as never))?.streamSeq).toBe(2);
    expect(await StreamHead.exists({ _id: 'exec-new' })).toBeNull();
    // Events written without raising the head stay unread until a write raises it (the finish: the outcome write).
    await insertEvents('exec-new', [{ seq: 3, event: 'result', data: {} }]);
    expect((await readEvents('exec-new')).map((e) => e.seq)).toEqual([1, 2]);
    await raiseHead('exec-new', 3);
    expect((await readEvents('exec-new')).map((e) => e.seq)).toEqual([1, 2, 3]);

    // Recorded by an older version: no `streamSeq`, the head in stream_heads.
    await Execution.collection.insertOne({ _id: 'exec-old' } as never);
    await StreamEvent.collection.insertMany(
      [1, 2].map((seq) => ({ _id: `exec-old:${seq}`, streamId: 'exec-old', seq, event: 'e', data: {} })) as never[]
    );
    await StreamHead.collection.insertOne({ _id: 'exec-old', lastSeq: 2 } as never);
    expect((await readEvents('exec-old')).map((e) => e.seq)).toEqual([1, 2]);
    // Still running when the new version took over: its next append raises the head on the record, above the old one.
    await appendEvents('exec-old', [{ seq: 3, event: 'e', data: {} }]);
    expect((await readEvents('exec-old')).map((e) => e.seq)).toEqual([1, 2, 3]);
  });

  it('an execution recorded with `metaOnRecord`: every reader yields its `meta` from the record, stored events from 2', async () => {
    const meta = { seq: 1, event: 'meta', data: { executionId: 'exec-rec', chatId: 'cht_r', sessionId: 'ses_r' } };
    await Execution.collection.insertOne({
      _id: 'exec-rec',
      chatId: 'cht_r',
      sessionId: 'ses_r',
      streamSeq: 0,
      metaOnRecord: true,
    } as never);
    // Nothing stored, and yet the stream holds its `meta`: the head is 1 from the record's insert on.
    expect(await StreamEvent.collection.countDocuments({ _id: { $regex: '^exec-rec:' } } as never)).toBe(0);
    expect(await lastSeq('exec-rec')).toBe(1);
    expect(await readEvents('exec-rec')).toEqual([meta]);
    expect(await readEvents('exec-rec', 1)).toEqual([]);
    // A live reader from the start gets it with the head it reads, then the appends after it.
    const tailer = new EventTailer(60_000); // no fallback tick: the subscription's read and the appends only
    try {
      const got: LoggedEvent[] = [];
      tailer.subscribe('exec-rec', 0, (e) => got.push(e));
      await until(() => got.length === 1);
      await appendEvents('exec-rec', [{ seq: 2, event: 'message', data: { text: 'a' } }]);
      await until(() => got.length === 2);
      expect(got.map((e) => e.event)).toEqual(['meta', 'message']);
      expect(got[0]).toEqual(meta);
    } finally {
      await tailer.stop();
    }
    // A second tailer joining from the start after a wake-up that names its seq: still `meta` first (the head read).
    const late = new EventTailer(60_000);
    try {
      const got: number[] = [];
      late.subscribe('exec-rec', 0, (e) => got.push(e.seq), false);
      late.wake([{ streamId: 'exec-rec', seq: 2 }]);
      await until(() => got.length === 2);
      expect(got).toEqual([1, 2]);
    } finally {
      await late.stop();
    }
    // The head is on the record; only the events after `meta` are stored.
    expect((await Execution.collection.findOne({ _id: 'exec-rec' } as never))?.streamSeq).toBe(2);
    expect(await StreamEvent.exists({ _id: 'exec-rec:1' })).toBeNull();
    // Events past the head (a writer died before raising it): its next writer reads them after `meta`.
    await insertEvents('exec-rec', [{ seq: 3, event: 'result', data: {} }]);
    expect((await readEvents('exec-rec')).map((e) => e.seq)).toEqual([1, 2]);
    expect((await readWritten('exec-rec')).map((e) => [e.seq, e.event])).toEqual([
      [1, 'meta'],
      [2, 'message'],
      [3, 'result'],
    ]);
    // Its stored events expired: `meta` stays, the rest is one `expired` event from seq 2.
    await raiseHead('exec-rec', 3);
    await StreamEvent.collection.deleteMany({ _id: { $regex: '^exec-rec:' } } as never);
    expect((await readEvents('exec-rec')).map((e) => [e.seq, e.event, (e.data as { from?: number }).from])).toEqual([
      [1, 'meta', undefined],
      [3, 'expired', 2],
    ]);
  });

  it('appends idempotently: a retried append never duplicates', async () => {
    await appendEvents('s-idem', [
      { seq: 1, event: 'meta', data: { a: 1 } },
      { seq: 2, event: 'message', data: { b: 2 } },
    ]);
    await appendEvents('s-idem', [
      { seq: 2, event: 'message', data: { b: 2 } },
      { seq: 3, event: 'result', data: {} },
    ]);
    expect((await readEvents('s-idem')).map((e) => e.seq)).toEqual([1, 2, 3]);
    expect(await StreamEvent.collection.countDocuments({ _id: { $regex: '^s-idem:' } } as never)).toBe(3);
    // The stream and the seq are the halves of `_id`, not stored again (models/StreamEvent.ts).
    expect(Object.keys((await StreamEvent.collection.findOne({ _id: 's-idem:2' } as never))!).sort()).toEqual(
      ['_id', 'createdAt', 'data', 'event', 'expiresAt', 'expiryBucket'].sort()
    );
    expect(await lastSeq('s-idem')).toBe(3);
    expect(await lastSeq('s-none')).toBe(0);
  });

  it("reads the stream and the seq back from an event's `_id`, a stream id with colons too", async () => {
    expect(eventKey('chat:cht_1:12')).toEqual({ streamId: 'chat:cht_1', seq: 12 });
    await appendEvents('chat:cht_1', [
      { seq: 1, event: 'meta', data: {} },
      { seq: 2, event: 'message', data: { text: 'a' } },
    ]);
    expect(await readEvents('chat:cht_1')).toEqual([
      { seq: 1, event: 'meta', data: {} },
      { seq: 2, event: 'message', data: { text: 'a' } },
    ]);
  });

  it('coalesces text deltas: many tokens become few events, text intact and in order', async () => {
    const writer = new CoalescingWriter('s-coalesce', 1, delta, 50);
    const tokens = Array.from({ length: 200 }, (_, i) => `t${i} `);
    for (const t of tokens) writer.text(t);
    const next = await writer.flush();
    const events = await readEvents('s-coalesce');
    expect(events.length).toBeLessThan(5);
    expect(next).toBe(events.length + 1);
    expect(events.map((e) => (e.data as { text: string }).text).join('')).toBe(tokens.join(''));
    expect(writer.written).toBe(tokens.join(''));
  });

  it('a writer whose write failed writes nothing more (a retry may already be writing the stream)', async () => {
    // The mirror fails once the test lets it: never before the second delta is buffered, however loaded the machine.
    let fail!: () => void;
    const failNow = new Promise<void>((resolve) => (fail = resolve));
    const failing = new CoalescingWriter('s-failed', 1, delta, 10, 4096, async (e) => {
      if (e.seq === 1) {
        await failNow;
        throw new Error('mirror failed');
      }
    });
    failing.text('first '); // written at once, then its mirror fails
    await new Promise((r) => setTimeout(r, 1)); // its write has started
    failing.text('second '); // buffered before the failure is known, flushed after it
    fail();
    await new Promise((r) => setTimeout(r, 50));
    await expect(failing.flush()).rejects.toThrow('mirror failed');
    expect(() => failing.text('third ')).toThrow('mirror failed');
    expect((await readEvents('s-failed')).map((e) => e.seq)).toEqual([1]);
  });

  it('one tailer serves many subscribers of a stream with one poll per tick, in order', async () => {
    const tailer = new EventTailer(10);
    try {
      const received: number[][] = Array.from({ length: 25 }, () => []);
      const unsubs = received.map((list) => tailer.subscribe('s-fan', 0, (e) => list.push(e.seq)));
      expect(tailer.activeStreams).toBe(1);
      for (let seq = 1; seq <= 5; seq++) await appendEvents('s-fan', [{ seq, event: 'message', data: {} }]);
      await until(() => received.every((l) => l.length === 5));
      for (const l of received) expect(l).toEqual([1, 2, 3, 4, 5]);
      unsubs.forEach((u) => u());
      expect(tailer.activeStreams).toBe(0);
    } finally {
      await tailer.stop();
    }
  });

  it('never delivers past a gap: seq 3 waits for seq 2', async () => {
    const tailer = new EventTailer(10);
    try {
      const got: number[] = [];
      tailer.subscribe('s-gap', 0, (e) => got.push(e.seq));
      await appendEvents('s-gap', [{ seq: 1, event: 'm', data: {} }]);
      await until(() => got.length === 1);
      await appendEvents('s-gap', [{ seq: 3, event: 'm', data: {} }]);
      await new Promise((r) => setTimeout(r, 100));
      expect(got).toEqual([1]);
      await appendEvents('s-gap', [{ seq: 2, event: 'm', data: {} }]);
      await until(() => got.length === 3);
      expect(got).toEqual([1, 2, 3]);
    } finally {
      await tailer.stop();
    }
  });

  it('a wake-up naming its seq is read by id without the head; a seq far ahead or none reads the head', async () => {
    const tailer = new EventTailer(60_000); // no fallback tick within the test: only wake-ups read
    const insert = (seqs: number[]): Promise<unknown> =>
      StreamEvent.insertMany(
        // head untouched
        seqs.map((seq) => ({
          _id: `s-seq:${seq}`,
          event: 'm',
          data: {},
          ...expiryFields(new Date()),
        }))
      );
    try {
      const got: number[] = [];
      tailer.subscribe('s-seq', 0, (e) => got.push(e.seq));
      await new Promise((r) => setTimeout(r, 50)); // the subscription's own first read (head 0: nothing)
      await insert([1, 2, 3]);
      tailer.wake([{ streamId: 's-seq', seq: 3 }]);
      await until(() => got.length === 3);
      expect(got).toEqual([1, 2, 3]);
      // Far ahead (a forged datagram): the head decides, and it says nothing more is written.
      await insert([4]);
      tailer.wake([{ streamId: 's-seq', seq: 1_000_000 }]);
      await new Promise((r) => setTimeout(r, 100));
      expect(got).toEqual([1, 2, 3]);
      // Without a seq: the head too; once it moves, the event is read.
      await appendEvents('s-seq', [{ seq: 5, event: 'm', data: {} }]);
      tailer.wake([{ streamId: 's-seq' }]);
      await until(() => got.length === 5);
      expect(got).toEqual([1, 2, 3, 4, 5]);
    } finally {
      await tailer.stop();
    }
  });

  it('a reader in the appending process gets the committed events from memory: no wake-up, no tick, no read', async () => {
    const tailer = new EventTailer(60_000); // no fallback tick within the test, and no wake-up receiver
    try {
      const got: number[] = [];
      const stored: Promise<boolean>[] = [];
      tailer.subscribe('s-local', 0, (e) => {
        got.push(e.seq);
        // Durable first: what a reader is handed is already in the log.
        stored.push(StreamEvent.exists({ _id: `s-local:${e.seq}` }).then((d) => d !== null));
      });
      await new Promise((r) => setTimeout(r, 50)); // the subscription's own first read (nothing yet)
      await appendEvents('s-local', [{ seq: 1, event: 'meta', data: {} }]);
      await appendEvents('s-local', [
        { seq: 2, event: 'message', data: { text: 'a' } },
        { seq: 3, event: 'message', data: { text: 'b' } },
      ]);
      // Handed over before the append returned.
      expect(got).toEqual([1, 2, 3]);
      expect(await Promise.all(stored)).toEqual([true, true, true]);
      // An append after a gap (seq 4 is another writer's, not read yet) is not delivered from memory out of order.
      await appendEvents('s-local', [{ seq: 5, event: 'm', data: {} }]);
      await new Promise((r) => setTimeout(r, 100));
      expect(got).toEqual([1, 2, 3]);
    } finally {
      await tailer.stop();
    }
  });

  it('a late subscriber starting behind gets its own catch-up without duplicates for the others', async () => {
    const tailer = new EventTailer(10);
    try {
      for (let seq = 1; seq <= 3; seq++) await appendEvents('s-late', [{ seq, event: 'm', data: {} }]);
      const early: number[] = [];
      tailer.subscribe('s-late', 3, (e) => early.push(e.seq));
      await appendEvents('s-late', [{ seq: 4, event: 'm', data: {} }]);
      await until(() => early.length === 1);
      const late: number[] = [];
      tailer.subscribe('s-late', 1, (e) => late.push(e.seq));
      await until(() => late.length === 3);
      await appendEvents('s-late', [{ seq: 5, event: 'm', data: {} }]);
      await until(() => early.length === 2 && late.length === 4);
      expect(early).toEqual([4, 5]);
      expect(late).toEqual([2, 3, 4, 5]);
    } finally {
      await tailer.stop();
    }
  });
});
