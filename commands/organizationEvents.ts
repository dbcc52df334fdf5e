/**
 * An organization's activity stream (GET /api/events; docs/decisions.md "Organization activity stream"): the service
 * events recordEvent already writes (`service_events`), read in `(createdAt, _id)` order after a cursor, then live.
 * It adds no database write: recordEvent sends a wake-up datagram (lib/wakeups.ts, `service-events:<org>`), the api
 * process's {@link OrganizationEventFeed} reads the organization's new events at once (one read per organization
 * for all its connected clients), and a fallback poll (EVENT_POLL_MS) covers a lost datagram, as the event log's
 * tailer does.
 *
 * The cursor of an event is `<createdAt ms>-<event id>`. An event's `createdAt` is read by the process that records
 * it just before its insert, so an event may become visible a little after a later-stamped one: live events are
 * handed out only once they are {@link SETTLE_MS} old, and a reader that read past a position never sees an event
 * stamped before it later (gap-free as long as an insert lands within SETTLE_MS of its clock read and the
 * processes' clocks agree within it).
 */
import mongoose from 'mongoose';
import { ValidationError } from '../lib/errors';
import type { Wakeup } from '../lib/wakeups';
import { ServiceEvent, type ServiceEventDoc } from '../models';
import type { EventTailer } from './eventLog';
import { organizationEventsWakeup, serviceEventBody, type ServiceEventBody } from './serviceEvents';

/** How old an event must be before it is handed out (see the header). */
export const SETTLE_MS = 1000;
/** Events read per query. */
const READ_BATCH = 200;

/** A position in an organization's events: after the event `id` stamped `at` (ms). */
export interface EventCursor {
  at: number;
  id: string;
}

const CURSOR = /^(\d{1,15})-(evt_[0-9A-Za-z]{1,64})$/;

/**
 * @param value a `Last-Event-ID` (or `?lastEventId=`).
 * @returns the cursor.
 * @throws ValidationError (400) when it is not one this service sent.
 */
export function parseEventCursor(value: string): EventCursor {
  const m = CURSOR.exec(value);
  if (!m) throw new ValidationError('Invalid Last-Event-ID: must be the id of an event of this stream');
  return { at: Number(m[1]), id: m[2] };
}

/**
 * @param doc a stored event.
 * @returns its cursor, the `id:` of its SSE event.
 */
export function eventCursor(doc: Pick<ServiceEventDoc, '_id' | 'createdAt'>): string {
  return `${new Date(doc.createdAt).getTime()}-${doc._id}`;
}

function compare(a: EventCursor, b: EventCursor): number {
  return a.at - b.at || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
}

/** One event handed to a listener: its cursor and its public body. */
export interface FeedEvent {
  cursor: string;
  event: ServiceEventBody;
}

interface Listener {
  position: EventCursor;
  deliver: (e: FeedEvent) => void;
}

interface OrganizationSubscription {
  listeners: Set<Listener>;
  reading: boolean;
  again: boolean;
  settleTimer?: NodeJS.Timeout;
}

/**
 * One per api process (made on first use from its {@link EventTailer}, whose wake-ups it shares): reads each
 * followed organization's new events when woken, on a settle timer, or on the fallback tick, and fans them out.
 */
export class OrganizationEventFeed {
  private readonly orgs = new Map<string, OrganizationSubscription>();
  private tick: NodeJS.Timeout | undefined;
  private readonly unsubscribeWakeups: () => void;

  /**
   * @param tailer the process's event-log tailer (its wake-ups are passed on here).
   * @param intervalMs fallback poll interval while anyone listens.
   * @param onError called when a read fails (the next wake-up or tick retries).
   */
  constructor(
    tailer: EventTailer,
    private readonly intervalMs: number,
    private readonly onError: (err: unknown) => void = () => undefined
  ) {
    this.unsubscribeWakeups = tailer.onWakeup((woken) => this.wake(woken));
  }

  /**
   * Hands out an organization's events after `position`, in order, as they settle.
   * @param organizationId the organization.
   * @param position the last event the listener has.
   * @param deliver called once per event.
   * @returns unsubscribe.
   */
  subscribe(organizationId: string, position: EventCursor, deliver: (e: FeedEvent) => void): () => void {
    let sub = this.orgs.get(organizationId);
    if (!sub) {
      sub = { listeners: new Set(), reading: false, again: false };
      this.orgs.set(organizationId, sub);
    }
    const listener: Listener = { position, deliver };
    sub.listeners.add(listener);
    void this.read(organizationId);
    this.ensureTick();
    return () => {
      const current = this.orgs.get(organizationId);
      if (!current) return;
      current.listeners.delete(listener);
      if (current.listeners.size === 0) {
        clearTimeout(current.settleTimer);
        this.orgs.delete(organizationId);
      }
      if (this.orgs.size === 0 && this.tick) {
        clearTimeout(this.tick);
        this.tick = undefined;
      }
    };
  }

  /** Stops passing wake-ups here (tests). */
  close(): void {
    this.unsubscribeWakeups();
  }

  private wake(woken: Wakeup[]): void {
    for (const { streamId } of woken) {
      if (!streamId.startsWith('service-events:')) continue;
      const organizationId = streamId.slice('service-events:'.length);
      if (this.orgs.has(organizationId) && organizationEventsWakeup(organizationId) === streamId)
        void this.read(organizationId);
    }
  }

  private ensureTick(): void {
    if (this.tick) return;
    this.tick = setTimeout(() => {
      this.tick = undefined;
      if (this.orgs.size === 0) return;
      for (const organizationId of this.orgs.keys()) void this.read(organizationId);
      this.ensureTick();
    }, this.intervalMs);
    this.tick.unref();
  }

  /** Reads one organization's events after its furthest-behind listener; a wake-up during a read reads again. */
  private async read(organizationId: string): Promise<void> {
    const sub = this.orgs.get(organizationId);
    if (!sub) return;
    if (sub.reading) {
      sub.again = true;
      return;
    }
    sub.reading = true;
    try {
      do {
        sub.again = false;
        await this.readOnce(organizationId, sub);
      } while (sub.again && this.orgs.get(organizationId) === sub);
    } catch (err) {
      this.onError(err);
    } finally {
      sub.reading = false;
    }
  }

  private async readOnce(organizationId: string, sub: OrganizationSubscription): Promise<void> {
    for (;;) {
      if (sub.listeners.size === 0) return;
      let from = [...sub.listeners][0].position;
      for (const l of sub.listeners) if (compare(l.position, from) < 0) from = l.position;
      const settled = Date.now() - SETTLE_MS;
      // One range on the index {organizationId, createdAt, _id}; events stamped in the cursor's millisecond at or
      // before its id are skipped here.
      const docs = await ServiceEvent.find({ organizationId, createdAt: mongoose.trusted({ $gte: new Date(from.at) }) })
        .sort({ createdAt: 1, _id: 1 })
        .limit(READ_BATCH)
        .lean<ServiceEventDoc[]>();
      let last = from;
      for (const doc of docs) {
        const at = new Date(doc.createdAt).getTime();
        if (at > settled) {
          // Not settled yet: read again once it is.
          clearTimeout(sub.settleTimer);
          sub.settleTimer = setTimeout(() => void this.read(organizationId), at - settled + 5);
          sub.settleTimer.unref();
          return;
        }
        const position = { at, id: doc._id };
        last = position;
        if (compare(position, from) <= 0) continue;
        const fed: FeedEvent = { cursor: eventCursor(doc), event: serviceEventBody(doc) };
        for (const l of [...sub.listeners]) {
          if (compare(position, l.position) <= 0) continue;
          l.position = position;
          l.deliver(fed);
        }
      }
      // A full batch (perhaps all in the cursor's millisecond) reads on from its last event.
      if (docs.length < READ_BATCH || compare(last, from) <= 0) return;
    }
  }
}

const feeds = new WeakMap<EventTailer, OrganizationEventFeed>();

/**
 * @param tailer the process's event-log tailer.
 * @param intervalMs fallback poll interval.
 * @param onError called when a read fails (the process's logger).
 * @returns the process's feed (made on first use).
 */
export function organizationFeedOf(
  tailer: EventTailer,
  intervalMs: number,
  onError: (err: unknown) => void
): OrganizationEventFeed {
  let feed = feeds.get(tailer);
  if (!feed) {
    feed = new OrganizationEventFeed(tailer, intervalMs, onError);
    feeds.set(tailer, feed);
  }
  return feed;
}

/**
 * @param types a `?types=` value: comma-separated type prefixes (`job.,chat.`) or whole types.
 * @returns a test of an event type (every type when empty).
 */
export function typeFilter(types: string | undefined): (type: string) => boolean {
  const prefixes = (types ?? '')
    .split(',')
    .map((t) => t.trim())
    .filter(Boolean);
  return prefixes.length === 0 ? () => true : (type) => prefixes.some((p) => type.startsWith(p));
}
