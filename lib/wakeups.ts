/**
 * Stream wake-ups (docs/architecture.md §6; docs/decisions.md "Live events"): pushed notifications that a stream of the
 * durable event log has new events, so api processes read the log at once instead of waiting for a poll tick.
 *
 * - Every api process runs a {@link WakeupReceiver}: a UDP socket on its HOST and an ephemeral port, registered in
 *   the `event_wakeup_targets` collection (`_id` = the target, refreshed every 10 s, expiring after 30 s).
 * - Every process that appends events (worker activities, the api itself) wakes every registered target after the
 *   stream's head has moved ({@link wakeStream}, called by commands/eventLog.ts `appendEvents`). Wake-ups of one event
 *   loop turn go out together, one datagram per target.
 * - A wake-up carries stream ids and the highest seq written to each, never events: readers always read the log
 *   (by id, gap-free), so a lost, late, duplicated or forged datagram costs at most a read. A lost one is covered by
 *   the reader's fallback poll (EVENT_POLL_MS).
 * - A datagram may also carry cache invalidations (`c`: `<cache>:<group>` names, lib/sharedCache.ts), which the
 *   receiving process hands to its {@link onInvalidation} handlers: a forged one costs at most a read too. The
 *   worker registers for invalidations only (`streams: false`): stream wake-ups are not sent to it.
 *
 * It works the same on MongoDB and on the embedded database, needs no replica set, and costs one datagram per api
 * process per batch of appends, whatever the number of connected clients.
 */
import { randomBytes } from 'node:crypto';
import dgram from 'node:dgram';
import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import mongoose, { type Collection } from 'mongoose';

/** A receiver's registration (`_id` = `<advertised host>:<port>:<random>`). */
interface TargetDoc {
  _id: string;
  host: string;
  port: number;
  expiresAt: Date;
  /** Whether the process reads streams (api) or only receives cache invalidations (worker); absent: it reads them. */
  streams?: boolean;
}

/**
 * The registry of receivers, `event_wakeup_targets`: one document per live process, tiny by construction, read whole
 * by writers (docs/query-shapes.md). It is the channel's own bookkeeping, not a record of the service, so it has no
 * mongoose model (models/ holds those, and lib/ imports no other project folder): it is read and written through the
 * shared connection's driver collection, as lib/mongo.ts reads its readiness probe [docs/decisions.md "Layout (issue
 * 29, second part)"].
 * @returns the collection. Its methods throw at once (not through their promise) while the database is not
 *   connected: call them inside an async function.
 */
function targetRegistry(): Collection<TargetDoc> {
  return mongoose.connection.collection<TargetDoc>('event_wakeup_targets');
}

/** How often a receiver renews its registration, and how long a registration lives without renewal. */
const RENEW_MS = 10_000;
const EXPIRE_MS = 30_000;
/** Retry interval of a first registration that failed. */
const FIRST_REGISTRATION_RETRY_MS = 250;
/** How long a writer uses its list of targets before reading it again. */
const TARGETS_TTL_MS = 2_000;
/** Stream ids per datagram (ids are short; this keeps a datagram well under a loopback or LAN MTU's worth). */
const IDS_PER_DATAGRAM = 20;
/** Largest datagram a receiver reads. */
const MAX_DATAGRAM = 4096;

interface Target {
  host: string;
  port: number;
  streams: boolean;
}

/** The writer side: batches wake-ups per event-loop turn and sends them to every registered api process. */
class WakeupSender {
  /** Streams to wake, each with the highest seq written since the last send. */
  private pending = new Map<string, number>();
  /** Cache invalidations to send, and who waits for them to be sent. */
  private invalidations = new Set<string>();
  private sentWaiters: (() => void)[] = [];
  private scheduled = false;
  private readonly sockets = new Map<'udp4' | 'udp6', dgram.Socket>();
  private targets: Target[] = [];
  private targetsAt = 0;
  private refreshing: Promise<void> | undefined;

  wake(streamId: string, seq: number): void {
    this.pending.set(streamId, Math.max(seq, this.pending.get(streamId) ?? 0));
    this.schedule();
  }

  invalidate(messages: readonly string[]): Promise<void> {
    for (const m of messages) this.invalidations.add(m);
    return new Promise<void>((resolve) => {
      this.sentWaiters.push(resolve);
      this.schedule();
    });
  }

  private schedule(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => void this.flush());
  }

  private async flush(): Promise<void> {
    this.scheduled = false;
    const waiters = this.sentWaiters;
    this.sentWaiters = [];
    try {
      await this.send();
    } finally {
      for (const resolve of waiters) resolve();
    }
  }

  private async send(): Promise<void> {
    const woken = [...this.pending];
    this.pending.clear();
    const ids = woken.map(([id]) => id);
    const seqs = woken.map(([, seq]) => seq);
    const invalidations = [...this.invalidations];
    this.invalidations.clear();
    if (ids.length === 0 && invalidations.length === 0) return;
    try {
      if (Date.now() - this.targetsAt > TARGETS_TTL_MS) {
        // The first send waits for the list; later ones use the current list while it is refreshed.
        const refresh = (this.refreshing ??= this.refresh().finally(() => (this.refreshing = undefined)));
        if (this.targetsAt === 0) await refresh;
        else refresh.catch(() => undefined); // the current list is used; a failed refresh is retried next time
      }
    } catch {
      return; // no list (database unreachable): readers fall back to polling
    }
    const sends: { payload: Buffer; to: Target[] }[] = [];
    const readers = this.targets.filter((t) => t.streams);
    for (let i = 0; i < ids.length; i += IDS_PER_DATAGRAM) {
      const payload = { s: ids.slice(i, i + IDS_PER_DATAGRAM), q: seqs.slice(i, i + IDS_PER_DATAGRAM) };
      sends.push({ payload: Buffer.from(JSON.stringify(payload)), to: readers });
    }
    for (let i = 0; i < invalidations.length; i += IDS_PER_DATAGRAM) {
      const payload = { s: [], c: invalidations.slice(i, i + IDS_PER_DATAGRAM) };
      sends.push({ payload: Buffer.from(JSON.stringify(payload)), to: this.targets });
    }
    // Resolves once every datagram is handed to the network (so a short-lived process, the admin CLI, can wait).
    await Promise.all(
      sends.flatMap(({ payload, to }) =>
        to.map(
          (t) => new Promise<void>((resolve) => this.socketFor(t.host).send(payload, t.port, t.host, () => resolve()))
        )
      )
    );
  }

  private socketFor(host: string): dgram.Socket {
    const type = isIP(host) === 6 ? 'udp6' : 'udp4';
    let socket = this.sockets.get(type);
    if (!socket) {
      socket = dgram.createSocket(type);
      socket.on('error', () => undefined); // a send that fails is a lost wake-up: the fallback poll covers it
      socket.unref();
      this.sockets.set(type, socket);
    }
    return socket;
  }

  private async refresh(): Promise<void> {
    if (mongoose.connection.readyState !== 1) throw new Error('not connected');
    const now = new Date();
    const docs = await targetRegistry().find({}).toArray();
    const live = docs.filter((d) => d.expiresAt > now);
    for (const d of docs)
      if (d.expiresAt <= now) void (async () => targetRegistry().deleteOne({ _id: d._id }))().catch(() => undefined);
    // Host names (WAKEUP_HOST in a container) are resolved once per refresh, not once per datagram.
    const resolved = await Promise.all(
      live.map(async (d) => {
        const streams = d.streams !== false;
        if (isIP(d.host)) return { host: d.host, port: d.port, streams };
        const a = await lookup(d.host).catch(() => undefined);
        return a ? { host: a.address, port: d.port, streams } : undefined;
      })
    );
    this.targets = resolved.filter((t): t is Target => t !== undefined);
    this.targetsAt = Date.now();
  }
}

const sender = new WakeupSender();
const invalidationHandlers: ((message: string) => void)[] = [];

/**
 * Sends cache invalidations to every api process (lib/sharedCache.ts `invalidate` is the caller).
 * @param messages `<cache>:<group>` names.
 * @returns resolves once they are sent, or once sending is given up (database unreachable); never rejects.
 */
export function broadcastInvalidations(messages: readonly string[]): Promise<void> {
  return sender.invalidate(messages);
}

/**
 * @param handler called with each cache invalidation this process receives.
 */
export function onInvalidation(handler: (message: string) => void): void {
  invalidationHandlers.push(handler);
}

/**
 * Tells every api process that a stream has new events up to `seq` (call after its head moved), so a reader fetches
 * them by id without reading the head first. Never throws, never waits.
 * @param streamId the stream.
 * @param seq the highest seq now written.
 */
export function wakeStream(streamId: string, seq: number): void {
  sender.wake(streamId, seq);
}

/** A stream named by a wake-up, with the highest seq the writer said it wrote (absent from older senders). */
export interface Wakeup {
  streamId: string;
  seq?: number;
}

/** The receiving side: passes stream wake-ups (api) and cache invalidations (api and worker) on. */
export class WakeupReceiver {
  private socket: dgram.Socket | undefined;
  private renewTimer: NodeJS.Timeout | undefined;
  private id = '';

  /**
   * @param onWake called with the streams (and their seqs, when named) of each valid datagram; null registers for
   *   cache invalidations only, so writers send no stream wake-ups here.
   * @param onError called when the registration cannot be renewed (the next renewal retries).
   */
  constructor(
    private readonly onWake: ((woken: Wakeup[]) => void) | null,
    private readonly onError: (err: unknown) => void = () => undefined
  ) {}

  /**
   * Opens the socket and registers it (in the background: the registration waits for the database).
   * @param bindHost the interface to listen on (the api's HOST).
   * @param advertisedHost the address writers send to.
   * @returns the UDP port.
   */
  async start(bindHost: string, advertisedHost: string): Promise<number> {
    const socket = dgram.createSocket(isIP(bindHost) === 4 ? 'udp4' : 'udp6');
    socket.on('message', (msg) => this.receive(msg));
    socket.on('error', (err) => this.onError(err));
    await new Promise<void>((resolve, reject) => {
      socket.once('error', reject);
      socket.bind(0, bindHost, () => {
        socket.removeListener('error', reject);
        resolve();
      });
    });
    socket.unref();
    this.socket = socket;
    const port = socket.address().port;
    this.id = `${advertisedHost}:${port}:${randomBytes(4).toString('hex')}`;
    // (async: the driver's collection throws at once, not through its promise, while the database is not connected)
    const register = async (): Promise<unknown> =>
      targetRegistry().updateOne(
        { _id: this.id },
        {
          $set: {
            host: advertisedHost,
            port,
            streams: this.onWake !== null,
            expiresAt: new Date(Date.now() + EXPIRE_MS),
          },
        },
        { upsert: true }
      );
    // A registration that fails (the database is not reachable yet: commands are not queued) is retried soon,
    // and at every renewal after that; until it succeeds this api relies on its fallback poll.
    let registered = false;
    let failures = 0;
    const renew = (): void =>
      void register().then(
        () => {
          registered = true;
          failures = 0;
        },
        (err: unknown) => {
          if (failures++ === 0) this.onError(err); // once per outage, not once per retry
          if (!registered && this.socket) setTimeout(renew, FIRST_REGISTRATION_RETRY_MS).unref();
        }
      );
    renew();
    this.renewTimer = setInterval(renew, RENEW_MS);
    this.renewTimer.unref();
    return port;
  }

  /** Closes the socket and removes the registration. */
  async stop(): Promise<void> {
    if (this.renewTimer) clearInterval(this.renewTimer);
    this.renewTimer = undefined;
    this.socket?.close();
    this.socket = undefined;
    const id = this.id;
    if (id) await (async () => targetRegistry().deleteOne({ _id: id }))().catch(() => undefined);
  }

  private receive(msg: Buffer): void {
    if (msg.length > MAX_DATAGRAM) return;
    try {
      const parsed = JSON.parse(msg.toString('utf8')) as { s?: unknown; q?: unknown; c?: unknown };
      if (Array.isArray(parsed.c)) {
        for (const m of parsed.c)
          if (typeof m === 'string' && m.length <= 300) for (const handle of invalidationHandlers) handle(m);
      }
      if (!Array.isArray(parsed.s)) return;
      const seqs = Array.isArray(parsed.q) ? parsed.q : [];
      // A forged or garbled seq costs at most a read: readers deliver only events they read, gap-free.
      const woken = parsed.s.flatMap((id: unknown, i): Wakeup[] => {
        if (typeof id !== 'string' || id.length > 200) return [];
        const seq: unknown = seqs[i];
        return [{ streamId: id, ...(Number.isSafeInteger(seq) && (seq as number) > 0 ? { seq: seq as number } : {}) }];
      });
      if (woken.length > 0) this.onWake?.(woken);
    } catch {
      // not a wake-up: ignored
    }
  }
}
