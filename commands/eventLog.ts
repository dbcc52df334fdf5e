/**
 * The durable event log (docs/architecture.md §6). Every stream (an execution; later chats and jobs) is a sequence of
 * events in MongoDB with a per-stream, gap-free `seq` starting at 1 and `_id` = `<streamId>:<seq>`, so an append
 * retried by an activity can never create a second copy. Each stream has one writer at a time.
 *
 * Every access is a point read or write by `_id`: a stream's head (`stream_heads`, `{_id: streamId, lastSeq}`; an
 * execution's on its record: commands/streamHeads.ts) says how far it goes (a stream's first event alone is written
 * without a head: no head means at most event 1), and
 * events are fetched by their deterministic ids, so every read touches exactly the events it returns on MongoDB and
 * on the embedded database, which pushes down only top-level equality (a `seq` range would touch the whole stream:
 * docs/query-shapes.md). Writers insert events first and raise the head after, so a reader never sees a gap. An
 * execution recorded with `metaOnRecord` stores no event 1: its `meta` comes with the head read, from the record
 * (commands/executionMeta.ts), and every reader here yields it as seq 1 and reads the stored events from seq 2; a
 * finished one marked with `finalFrom` stores no final events either (commands/executionFinal.ts): the readers yield
 * them from the head read after the stored events, reading the reply only when a range covers an event holding it. The
 * writer's own process hands its events to its readers as soon as the insert is acknowledged, before the head raise
 * (issue 37 lever 1); a writer that dies in between leaves them past the head, and the stream's next writer reads past
 * the head and carries on after them ({@link readWritten}).
 *
 * Events expire STREAM_EVENT_RETENTION after they were written (lib/expiry.ts; docs/decisions.md "Retention"),
 * oldest first; heads stay. A read that meets a missing event below the head (it expired) says so with one
 * `expired` event covering the whole gap, with the seq of the gap's last event as its own, so a client resuming from
 * it continues with the first event still kept.
 *
 * Readers: `readEvents` replays; `EventTailer` (one per api process) reads a stream's new events as soon as a
 * wake-up says its head moved (lib/wakeups.ts: pushed by whoever appended), and checks the heads of every stream
 * with live subscribers once per fallback tick in case a wake-up was lost. It fans events out in memory, so the
 * cost grows with the number of active streams, not with the number of connected clients.
 *
 * The events and heads are models (models/StreamEvent.ts, models/StreamHead.ts); the log that reads and writes them
 * is here, below api/ and activities/, which both use it (docs/decisions.md "Layout (issue 29, second part)").
 */
import { crashPoint, crashPointsArmed } from '../lib/crashPoints';
import { retentionExpiry } from '../lib/expiry';
import { isDuplicateKey } from '../lib/mongo';
import { wakeStream, WakeupReceiver, type Wakeup } from '../lib/wakeups';
import { StreamEvent, type LoggedEvent, type StreamEventDoc } from '../models';
import { isExecutionStream, raiseHead, readHead, type Head } from './streamHeads';

export { lastSeq, readHead, type Head } from './streamHeads';

/** The event a read puts in place of events that expired: `{from, to, message}`, with seq `to`. */
export const EXPIRED_EVENT = 'expired';

/**
 * Events fetched by one query when reading a range: the query names each event's `_id` (an `$or` of `_id`
 * equalities, which both MongoDB and the embedded database answer from the `_id` index; docs/query-shapes.md).
 */
const READ_BATCH = 100;

const eventId = (streamId: string, seq: number): string => `${streamId}:${seq}`;

/**
 * The stream and the seq an event's `_id` names: its two halves (`<streamId>:<seq>`; a stream id may hold colons
 * itself, `chat:<chatId>`, the seq never does). Events store no `streamId` and `seq` fields of their own
 * (models/StreamEvent.ts).
 * @param id an event's `_id`.
 * @returns its stream and seq.
 */
export function eventKey(id: string): { streamId: string; seq: number } {
  const at = id.lastIndexOf(':');
  return { streamId: id.slice(0, at), seq: Number(id.slice(at + 1)) };
}

/** An event as streamed to clients. */
export type { LoggedEvent } from '../models';

/**
 * Fields of an execution's record that its stream's writer sets in the update raising the head (commands/streamHeads.ts
 * `raiseHead`): one write of the record instead of two (the reply's token counts: activities/executionUsage.ts
 * `headFields`).
 */
export interface HeadFields {
  /** The fields and their values (`$set`). */
  set: Record<string, unknown>;
  /**
   * Called once the head raise has settled.
   * @param written false when the fields were not written (the raise failed, or the stream's head is not on an
   *   execution record).
   */
  settled(written: boolean): void;
}

/**
 * Appends events with explicit, consecutive seqs, then raises the stream's head. An event whose seq already exists
 * is kept as it is (idempotent retries).
 * @param streamId the stream.
 * @param events events in seq order.
 * @param alsoSetOnHeadRaise asked, right before the head raise (none for an append ending at seq 1), for fields of
 *   the execution record to set in the same update.
 */
export async function appendEvents(
  streamId: string,
  events: LoggedEvent[],
  alsoSetOnHeadRaise?: () => HeadFields | undefined
): Promise<void> {
  if (events.length === 0) return;
  const retried = await insertEvents(streamId, events);
  const last = events[events.length - 1].seq;
  // Committed (the insert is acknowledged): this process's readers get them now, before the head raise (issue 37
  // lever 1). A writer that dies before raising the head leaves them past it; the next writer of the stream reads
  // past the head ({@link readWritten}) and carries on after them, so a reader that had them loses nothing and
  // never gets another event at their seqs; a reader that resumes from one of them reads on once the head passes it.
  if (!retried) handToLocalReaders(streamId, events);
  // The fault tests kill a worker here: events written, head not raised (lib/crashPoints.ts; off in production).
  if (crashPointsArmed && isExecutionStream(streamId)) await crashPoint(`stream-head:exec:${last}`);
  // An append that ends at seq 1 is the stream's first event alone (an MCP stream's first message; an execution's
  // `meta` when its record does not hold it: commands/executionMeta.ts): it raises no head, since a stream without
  // one holds its first event at most ({@link lastSeq}).
  if (last > 1) {
    const also = alsoSetOnHeadRaise?.();
    let written = false;
    try {
      written = await raiseHead(streamId, last, also?.set);
    } finally {
      also?.settled(written);
    }
  }
  wakeStream(streamId, last);
}

/**
 * Writes events without raising the stream's head: no reader sees them until a later write raises it (an execution's
 * finish raises it with the outcome: commands/streamHeads.ts), then {@link announceAppended}. An event whose seq
 * already exists is kept as it is.
 * @param streamId the stream.
 * @param events events in seq order.
 * @returns whether some already existed (a retried append).
 */
export async function insertEvents(streamId: string, events: LoggedEvent[]): Promise<boolean> {
  if (events.length === 0) return false;
  const createdAt = new Date();
  const expiry = retentionExpiry('streamEventsMs', createdAt);
  try {
    // Plain objects, written as they are through the driver (no mongoose document, no Query layer); the fields are
    // all given here, of the schema's types.
    await StreamEvent.collection.insertMany(
      events.map((e) => ({
        _id: eventId(streamId, e.seq),
        event: e.event,
        data: e.data,
        createdAt,
        ...expiry,
      })) as never[],
      { ordered: true }
    );
    return false;
  } catch (err) {
    if (!isDuplicateKey(err)) throw err;
    // Some already existed (a retried append): write the rest one by one.
    for (const e of events) {
      await StreamEvent.updateOne(
        { _id: eventId(streamId, e.seq) },
        { $setOnInsert: { event: e.event, data: e.data, ...expiry } },
        { upsert: true }
      );
    }
    return true;
  }
}

/**
 * Events written and their head raised (committed): this process's readers get them now, from memory, and the other
 * processes' are woken. Events of a retried append, which kept what was already stored, are not handed over: their
 * readers read the log.
 * @param streamId the stream.
 * @param events the events, in seq order.
 * @param retried whether {@link insertEvents} found some already stored.
 */
export function announceAppended(streamId: string, events: LoggedEvent[], retried: boolean): void {
  if (events.length === 0) return;
  if (!retried) handToLocalReaders(streamId, events);
  wakeStream(streamId, events[events.length - 1].seq);
}

/**
 * Hands committed events to this process's tailers, from memory.
 * @param streamId the stream.
 * @param events the events, in seq order.
 */
function handToLocalReaders(streamId: string, events: LoggedEvent[]): void {
  for (const tailer of localTailers) tailer.deliverAppended(streamId, events);
}

/**
 * @param streamId a stream.
 * @returns whether a reader of this process follows it live (an SSE client of a streamed execution, most often).
 */
export function followedHere(streamId: string): boolean {
  for (const tailer of localTailers) if (tailer.follows(streamId)) return true;
  return false;
}

/**
 * The tailers of this process ({@link EventTailer}): the events this process appends are handed to them once committed
 * (issue 37 lever 1: no wake-up to itself, no read back), so a reader in the process that writes (the normal case with
 * eager start) gets a text delta without a round trip to the database.
 */
const localTailers = new Set<EventTailer>();

/**
 * @param streamId the stream.
 * @param seq a position.
 * @returns the event stored at it, past the head too (an event is inserted before its head is raised, and this
 *   process's readers may have it in between: {@link EventTailer}), or undefined.
 */
export async function storedEventAt(streamId: string, seq: number): Promise<LoggedEvent | undefined> {
  return (await fetchRange(streamId, seq, seq))[0];
}

/**
 * Fetches events `from..to` (inclusive) by id, READ_BATCH to a query, stopping at the first one missing; the events
 * the head read brought from the execution's record (its `meta`, its final events) are yielded at their seqs.
 * @param head the stream's head as read, when it holds events that are not stored ({@link Head} `first`, `final`).
 * @returns events in seq order.
 */
async function fetchRange(
  streamId: string,
  from: number,
  to: number,
  head?: Pick<Head, 'first' | 'final'>
): Promise<LoggedEvent[]> {
  const out: LoggedEvent[] = [];
  const final = head?.final;
  // Stored: up to the record's final events, if it holds them.
  const storedTo = final ? Math.min(to, final.from - 1) : to;
  let start = from;
  if (head?.first && start === 1 && storedTo >= 1) {
    out.push(head.first);
    start = 2;
  }
  for (; start <= storedTo; start += READ_BATCH) {
    const seqs = Array.from({ length: Math.min(READ_BATCH, storedTo - start + 1) }, (_, i) => start + i);
    const docs = await StreamEvent.collection
      .find<StreamEventDoc>({ $or: seqs.map((seq) => ({ _id: eventId(streamId, seq) })) } as never)
      .toArray();
    const bySeq = new Map(docs.map((d) => [eventKey(d._id).seq, d]));
    for (const seq of seqs) {
      const d = bySeq.get(seq);
      if (!d) return out; // never deliver past a missing event
      out.push({ seq, event: d.event, data: d.data as Record<string, unknown> });
    }
  }
  if (final && to >= final.from) out.push(...(await final.events(Math.max(from, final.from), to)));
  return out;
}

/**
 * The first seq in `from..to` whose event is still kept, by point reads (a binary search: events expire oldest first,
 * so the kept ones follow the expired ones).
 * @returns that seq, or `to + 1` when none is kept.
 */
async function firstKept(streamId: string, from: number, to: number): Promise<number> {
  let lo = from;
  let hi = to + 1;
  while (lo < hi) {
    const mid = Math.floor((lo + hi) / 2);
    if (await StreamEvent.exists({ _id: eventId(streamId, mid) })) hi = mid;
    else lo = mid + 1;
  }
  return lo;
}

/**
 * @param from the first expired seq.
 * @param to the last.
 * @returns the event that stands for them.
 */
function expiredEvent(from: number, to: number): LoggedEvent {
  const message =
    from === to
      ? `Event ${from} of this stream expired and is no longer kept`
      : `Events ${from} to ${to} of this stream expired and are no longer kept`;
  return { seq: to, event: EXPIRED_EVENT, data: { from, to, message } };
}

/**
 * Reads a stream after a position. Events that expired are not skipped silently: each run of them becomes one
 * `expired` event ({@link EXPIRED_EVENT}, seq = the run's last seq) in its place.
 * @param streamId the stream.
 * @param afterSeq return events with seq greater than this.
 * @param limit most seqs to cover.
 * @param head the stream's head when the caller just read it ({@link readHead}): not read again.
 * @returns events in seq order.
 */
export async function readEvents(streamId: string, afterSeq = 0, limit = 10_000, head?: Head): Promise<LoggedEvent[]> {
  const read = head ?? (await readHead(streamId));
  const last = read.seq;
  if (last <= afterSeq) return [];
  const to = Math.min(last, afterSeq + limit);
  // The last stored event: the final events the record holds never expire (they last as long as the record).
  const lastStored = read.final ? read.final.from - 1 : last;
  const out: LoggedEvent[] = [];
  for (let from = afterSeq + 1; from <= to;) {
    const kept = await fetchRange(streamId, from, to, read);
    out.push(...kept);
    const missing = from + kept.length;
    if (missing > to) break;
    // Below the head every event was written (writers raise the head after their events): this one expired.
    const next = await firstKept(streamId, missing + 1, lastStored);
    out.push(expiredEvent(missing, next - 1));
    from = next;
  }
  return out;
}

/**
 * Reads everything written to a stream, for its writer (a retried reply, a finish): the events up to the head as
 * {@link readEvents} does, then those written past it, up to the first seq missing. A writer that died after an
 * insert and before its head raise left events past the head; the next writer carries on after them (it never writes
 * their seqs again with other contents, and a reader that already got them, from memory, loses nothing).
 * @param streamId the stream.
 * @returns events in seq order.
 */
export async function readWritten(streamId: string): Promise<LoggedEvent[]> {
  const head = await readHead(streamId);
  const out = await readEvents(streamId, 0, Number.MAX_SAFE_INTEGER, head);
  for (let from = head.seq + 1; ; from += READ_BATCH) {
    const past = await fetchRange(streamId, from, from + READ_BATCH - 1);
    out.push(...past);
    if (past.length < READ_BATCH) return out;
  }
}

/**
 * Buffers text deltas of one stream and writes them coalesced: at most one event per `intervalMs` (or sooner when
 * `maxChars` accumulate), instead of one document per token. Writes are sequential, so seqs stay in order.
 */
export class CoalescingWriter {
  private buffer = '';
  private timer: NodeJS.Timeout | undefined;
  private chain: Promise<void> = Promise.resolve();
  private failure: unknown;

  /**
   * @param streamId the stream.
   * @param nextSeq seq of the next event to write.
   * @param makeDelta turns coalesced text into an event.
   * @param intervalMs flush interval.
   * @param maxChars flush early past this many buffered characters.
   * @param afterAppend called with each event once it is written, before the next one is (e.g. to mirror it into
   *   another stream, in order).
   * @param alsoSetOnHeadRaise fields of the execution record to set in each update that raises the head over this
   *   writer's events ({@link appendEvents}), asked for right before it.
   */
  private readonly firstSeq: number;

  constructor(
    private readonly streamId: string,
    private nextSeq: number,
    private readonly makeDelta: (text: string) => Omit<LoggedEvent, 'seq'>,
    private readonly intervalMs = 50,
    private readonly maxChars = 4096,
    private readonly afterAppend: (event: LoggedEvent) => Promise<void> = async () => undefined,
    private readonly alsoSetOnHeadRaise?: () => HeadFields | undefined
  ) {
    this.firstSeq = nextSeq;
  }

  /** Characters written so far through this writer. */
  written = '';

  /** Whether this writer has written (or is writing) an event. */
  get wrote(): boolean {
    return this.nextSeq > this.firstSeq;
  }

  /** @param text a text delta. */
  text(text: string): void {
    if (this.failure) throw this.failure;
    this.buffer += text;
    // The first delta goes out at once (time to first token matters most); later ones are coalesced.
    if (this.buffer.length >= this.maxChars || (this.nextSeq === this.firstSeq && !this.timer)) this.schedule(0);
    else if (!this.timer) this.schedule(this.intervalMs);
  }

  private schedule(delay: number): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.flushBuffer();
    }, delay);
  }

  private flushBuffer(): Promise<void> {
    if (this.buffer === '') return this.chain;
    const text = this.buffer;
    this.buffer = '';
    const event = { seq: this.nextSeq++, ...this.makeDelta(text) };
    this.chain = this.chain
      .then(async () => {
        // After a failed write this writer writes nothing more: its attempt is failing, and a later write could
        // land after the retry read the stream, at a seq the retry then writes with differently cut text.
        if (this.failure) return;
        await appendEvents(this.streamId, [event], this.alsoSetOnHeadRaise);
        await this.afterAppend(event);
        this.written += text;
      })
      .catch((err: unknown) => {
        this.failure ??= err;
      });
    return this.chain;
  }

  /**
   * Writes the buffered text, then other events (a tool call and its result) at the next seqs, in one insert,
   * and waits for every write.
   * @param events the events, without seqs.
   * @returns the events as written.
   */
  async append(events: Omit<LoggedEvent, 'seq'>[]): Promise<LoggedEvent[]> {
    await this.flush();
    const written = events.map((e) => ({ seq: this.nextSeq++, ...e }));
    this.chain = this.chain
      .then(async () => {
        if (this.failure) return;
        await appendEvents(this.streamId, written, this.alsoSetOnHeadRaise);
        for (const e of written) await this.afterAppend(e);
      })
      .catch((err: unknown) => {
        this.failure ??= err;
      });
    await this.flush();
    return written;
  }

  /**
   * Takes the buffered text back unwritten, once no more text will come (the model's stream ended): the caller
   * writes it with its next events (an execution's finish, with its final events: one insert and one head raise
   * fewer). Waits for the writes in flight.
   * @returns the text held back ('' when none was buffered).
   */
  async hold(): Promise<string> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    await this.chain;
    if (this.failure) throw this.failure;
    const held = this.buffer;
    this.buffer = '';
    return held;
  }

  /**
   * Writes whatever is buffered and waits for every write.
   * @returns the seq the next event should use.
   */
  async flush(): Promise<number> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    await this.flushBuffer();
    await this.chain;
    if (this.failure) throw this.failure;
    return this.nextSeq;
  }
}

type Listener = (event: LoggedEvent) => void;

interface StreamSubscription {
  /** Highest seq delivered to every listener of the stream. */
  delivered: number;
  listeners: Set<Listener>;
  /** Those of them that follow the stream live ({@link EventTailer.follows}). */
  live: Set<Listener>;
}

/**
 * One per api process: reads a stream's new events when woken (or on the fallback tick) and fans them out.
 */
export class EventTailer {
  private readonly streams = new Map<string, StreamSubscription>();
  private timer: NodeJS.Timeout | undefined;
  private polling = false;
  private stopped = false;
  /** Streams woken since the last read (read at once), with the seq a wake-up named when it named one. */
  private woken = new Map<string, number | undefined>();
  private receiver: WakeupReceiver | undefined;
  /** The fallback tick came: read every stream. */
  private tickDue = false;
  /** Other readers of this process's wake-ups (commands/organizationEvents.ts: the organizations' service events). */
  private readonly wakeupHandlers = new Set<(woken: Wakeup[]) => void>();

  /**
   * @param intervalMs fallback poll interval while anyone listens (wake-ups make reads immediate).
   * @param onError called when a read fails (the next wake-up or tick retries).
   */
  constructor(
    private readonly intervalMs = 1000,
    private readonly onError: (err: unknown) => void = () => undefined
  ) {
    localTailers.add(this);
  }

  /**
   * Receives wake-ups from the processes that append events (lib/wakeups.ts); without it, only the fallback tick
   * reads the log.
   * @param bindHost the interface to listen on (the api's HOST).
   * @param advertisedHost the address writers send to (WAKEUP_HOST).
   * @returns the UDP port.
   */
  async listen(bindHost: string, advertisedHost: string): Promise<number> {
    this.receiver = new WakeupReceiver((woken) => {
      this.wake(woken);
      for (const handler of this.wakeupHandlers) handler(woken);
    }, this.onError);
    return this.receiver.start(bindHost, advertisedHost);
  }

  /**
   * Delivers events with seq > afterSeq of a stream as they are written.
   * @param streamId the stream.
   * @param afterSeq last seq the subscriber already has.
   * @param listener called once per event, in order.
   * @param readNow read the log once now (default), for events appended between the caller's replay and this call;
   *   false when the caller wrote the stream's events so far itself, just now (a just-started execution's `meta`):
   *   anything appended since reaches the listener with the next append (handed over, or read after the gap it
   *   leaves, by id) or the fallback tick.
   * @param live whether the listener follows the stream live (default: a client shown its text as it comes), which
   *   a writer of this process asks ({@link followedHere}); false for one that waits for the end only (a JSON
   *   execution's answer: commands/executions.ts `awaitExecution`).
   * @returns unsubscribe.
   */
  subscribe(streamId: string, afterSeq: number, listener: Listener, readNow = true, live = true): () => void {
    let sub = this.streams.get(streamId);
    if (!sub) {
      sub = { delivered: afterSeq, listeners: new Set(), live: new Set() };
      this.streams.set(streamId, sub);
    }
    // A listener that is behind the stream's position gets its own catch-up guard through `last`.
    let last = afterSeq;
    const guarded: Listener = (e) => {
      if (e.seq <= last) return;
      last = e.seq;
      listener(e);
    };
    sub.delivered = Math.min(sub.delivered, afterSeq);
    sub.listeners.add(guarded);
    if (live) sub.live.add(guarded);
    // Events written between the subscriber's replay and now were announced before it listened: read once now.
    if (readNow) this.wake([{ streamId }]);
    this.ensureTimer();
    return () => {
      const current = this.streams.get(streamId);
      if (!current) return;
      current.listeners.delete(guarded);
      current.live.delete(guarded);
      if (current.listeners.size === 0) this.streams.delete(streamId);
    };
  }

  /**
   * Reads the given streams' new events now (a wake-up arrived). Streams nobody listens to here are ignored.
   * @param woken the streams whose heads moved, each with the seq it moved to when the writer said.
   */
  wake(woken: Wakeup[]): void {
    let any = false;
    for (const { streamId, seq } of woken) {
      if (!this.streams.has(streamId)) continue;
      const known = this.woken.get(streamId);
      // Any wake-up without a seq means: read the head.
      const merged = this.woken.has(streamId) && known === undefined ? undefined : Math.max(seq ?? 0, known ?? 0);
      this.woken.set(streamId, seq === undefined ? undefined : merged);
      any = true;
    }
    if (any) void this.poll();
  }

  /**
   * Passes every wake-up this process receives to another reader too (the organizations' service events, whose
   * wake-up names are not streams of this log).
   * @param handler called with the wake-ups of each datagram.
   * @returns stops passing them.
   */
  onWakeup(handler: (woken: Wakeup[]) => void): () => void {
    this.wakeupHandlers.add(handler);
    return () => this.wakeupHandlers.delete(handler);
  }

  /**
   * Events this process appended, committed (their insert acknowledged; the head may not be raised over them yet):
   * delivered from memory when they continue what the stream's listeners have; after a gap (an append of another
   * process not read yet), the log is read instead, by id up to their seq (not bounded by the head).
   * @param streamId the stream.
   * @param events the events as appended, in seq order.
   */
  deliverAppended(streamId: string, events: readonly LoggedEvent[]): void {
    const sub = this.streams.get(streamId);
    if (!sub || this.stopped) return;
    if (events[0].seq > sub.delivered + 1) return this.wake([{ streamId, seq: events[events.length - 1].seq }]);
    for (const { seq, event, data } of events) {
      if (seq <= sub.delivered) continue;
      sub.delivered = seq;
      for (const l of [...sub.listeners]) l({ seq, event, data });
    }
  }

  /**
   * @param streamId a stream.
   * @returns whether a listener of this process follows it live.
   */
  follows(streamId: string): boolean {
    return (this.streams.get(streamId)?.live.size ?? 0) > 0;
  }

  /** Number of streams being followed (for tests and metrics). */
  get activeStreams(): number {
    return this.streams.size;
  }

  /** Stops for good (process shutdown): no more reads, and writers are told to stop sending wake-ups here. */
  async stop(): Promise<void> {
    this.stopped = true;
    localTailers.delete(this);
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    this.streams.clear();
    const receiver = this.receiver;
    this.receiver = undefined;
    await receiver?.stop();
  }

  private ensureTimer(): void {
    if (this.timer || this.stopped) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.tickDue = true;
      void this.poll();
    }, this.intervalMs);
  }

  /** Reads the woken streams (or all, on a tick); a wake-up during a read is served right after it. */
  private async poll(): Promise<void> {
    if (this.polling || this.stopped) return;
    if (this.streams.size === 0) {
      this.woken.clear();
      this.tickDue = false;
      return;
    }
    if (!this.tickDue && this.woken.size === 0) return;
    this.polling = true;
    const tick = this.tickDue;
    const woken = this.woken;
    const ids = tick ? [...this.streams.keys()] : [...woken.keys()];
    this.tickDue = false;
    this.woken = new Map();
    try {
      const entries = ids.flatMap((id) => {
        const sub = this.streams.get(id);
        return sub ? [[id, sub] as const] : [];
      });
      // A wake-up that named its seq, close ahead of what was delivered, saves reading the head; a tick, a seq
      // far ahead (perhaps forged) or none reads it, and so does an execution's stream read from its start (its
      // event 1 may be its record's `meta`, which comes with the head).
      const named = new Set<number>();
      const heads = await Promise.all(
        entries.map(([streamId, sub], i): Head | Promise<Head> => {
          const seq = tick ? undefined : woken.get(streamId);
          const fromStart = sub.delivered === 0 && isExecutionStream(streamId);
          if (seq === undefined || seq - sub.delivered > READ_BATCH || fromStart) return readHead(streamId);
          named.add(i);
          return { seq };
        })
      );
      await Promise.all(
        entries.map(async ([streamId, sub], i) => {
          const { seq: head } = heads[i];
          if (head <= sub.delivered) return;
          const to = Math.min(head, sub.delivered + 5000);
          let events = await fetchRange(streamId, sub.delivered + 1, to, heads[i]);
          const got = events.at(-1)?.seq ?? sub.delivered;
          // Read by the seq a wake-up named, without the head: an execution's final events are not stored but made
          // from its record (commands/executionFinal.ts), so a read that stops short of that seq reads the head and
          // goes on with what it brings.
          if (got < to && named.has(i) && isExecutionStream(streamId)) {
            const read = await readHead(streamId);
            if (read.final) events = events.concat(await fetchRange(streamId, got + 1, Math.min(read.seq, to), read));
          }
          for (const event of events) {
            // Delivered meanwhile from memory (deliverAppended): skipped, never sent twice.
            if (event.seq <= sub.delivered) continue;
            if (event.seq !== sub.delivered + 1) break;
            sub.delivered = event.seq;
            for (const l of [...sub.listeners]) l(event);
          }
        })
      );
    } catch (err) {
      this.onError(err);
    } finally {
      this.polling = false;
      if (this.woken.size > 0) void this.poll();
      if (this.streams.size > 0) this.ensureTimer();
    }
  }
}

/**
 * Follows a stream from a position until its terminal event: the events already written, then live ones through
 * the process's tailer (the MCP endpoint's tools follow an execution this way).
 * @param tailer this process's tailer.
 * @param streamId the stream.
 * @param afterSeq the last seq already seen (0: from the start).
 * @param onEvent called once per event, in order (the terminal one included).
 * @param isTerminal whether an event ends the stream.
 * @param signal aborts the wait (the promise then rejects with the signal's reason).
 * @param how `replay`: read the events after `afterSeq` first (default); false when the caller wrote the stream's
 *   events up to `afterSeq` itself, just now (a just-started execution's `meta`): nothing is read, the tailer delivers
 *   what follows ({@link EventTailer.subscribe} with `readNow` false). `live`: {@link EventTailer.subscribe}'s (default
 *   true).
 * @returns the terminal event.
 */
export function followEvents(
  tailer: EventTailer,
  streamId: string,
  afterSeq: number,
  onEvent: Listener,
  isTerminal: (event: LoggedEvent) => boolean,
  signal?: AbortSignal,
  how: { replay?: boolean; live?: boolean } = {}
): Promise<LoggedEvent> {
  const { replay = true, live = true } = how;
  return new Promise((resolve, reject) => {
    let last = afterSeq;
    let done = false;
    let unsubscribe: (() => void) | undefined;
    const stop = (): void => {
      done = true;
      unsubscribe?.();
      signal?.removeEventListener('abort', abort);
    };
    const abort = (): void => {
      stop();
      reject(signal?.reason ?? new Error('aborted'));
    };
    const deliver: Listener = (e) => {
      if (done || e.seq <= last) return;
      last = e.seq;
      onEvent(e);
      if (isTerminal(e)) {
        stop();
        resolve(e);
      }
    };
    if (signal?.aborted) return abort();
    signal?.addEventListener('abort', abort);
    if (!replay) {
      unsubscribe = tailer.subscribe(streamId, afterSeq, deliver, false, live);
      return;
    }
    readEvents(streamId, afterSeq).then(
      (events) => {
        events.forEach(deliver);
        if (!done) unsubscribe = tailer.subscribe(streamId, last, deliver, true, live);
      },
      (err: unknown) => {
        stop();
        reject(err);
      }
    );
  });
}
