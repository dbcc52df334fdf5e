/**
 * Live updates of many things over ONE connection per page: the organization's activity stream (GET /api/events,
 * docs/current-surface.md "Organization activity stream"), shared by every component that calls the hook.
 *
 * Usage (a list that refreshes when one of its items changes):
 *
 *   useOrganizationEvents(['task.'], [['tasks']]);                 // invalidates every ['tasks', …] query
 *   useOrganizationEvents(['job.', 'chat.'], (e) => [['jobs'], ['job', e.data.jobId]]);
 *   const { connection } = useOrganizationEvents(['chat.status_changed'], [['chats']]);
 *
 * - `types`: event type prefixes (`'job.'`) or whole types (`'chat.status_changed'`); an event matching one of them
 *   invalidates the react-query keys given (prefix match, as `invalidateQueries({queryKey})` does), or the keys the
 *   function returns for it. Invalidations of one burst of events are coalesced (one refetch per key).
 * - `connection`: `connecting`, `live`, or `reconnecting` (show it near live data if it matters).
 * - The EventSource is opened by the first component that subscribes and closed shortly after the last one leaves;
 *   after a dropped connection it resumes after the last event received (Last-Event-ID), so nothing is missed.
 *
 * Lower level: {@link subscribeOrganizationEvents} hands every event to a listener (outside React, or to read `data`).
 * Events are the webhook bodies: `{id, type, createdAt, organizationId, data}`.
 */
import { useQueryClient, type QueryKey } from '@tanstack/react-query';
import { useEffect, useRef, useState } from 'react';
import { ORGANIZATION_EVENT_TYPES } from './organizationEventTypes';

/** One event of the stream: the webhook body. */
export interface OrganizationEvent {
  id: string;
  type: string;
  createdAt: string;
  organizationId: string;
  data: Record<string, unknown>;
}

export type OrganizationConnection = 'connecting' | 'live' | 'reconnecting';

type Listener = (event: OrganizationEvent) => void;

const listeners = new Set<Listener>();
const connectionWatchers = new Set<(c: OrganizationConnection) => void>();
let source: EventSource | undefined;
let connection: OrganizationConnection = 'connecting';
/** The last event's id: where a new connection resumes. */
let lastId: string | undefined;
let closeTimer: ReturnType<typeof setTimeout> | undefined;
let reopenTimer: ReturnType<typeof setTimeout> | undefined;
/** How long the connection outlives its last subscriber (a page change keeps it). */
const LINGER_MS = 2000;
const REOPEN_MS = 3000;

function setConnection(c: OrganizationConnection): void {
  connection = c;
  for (const watch of connectionWatchers) watch(c);
}

function open(): void {
  const url = lastId === undefined ? '/api/events' : `/api/events?lastEventId=${encodeURIComponent(lastId)}`;
  const es = new EventSource(url);
  source = es;
  es.onopen = () => setConnection('live');
  es.onerror = () => {
    setConnection('reconnecting');
    // EventSource retries a dropped connection by itself (with Last-Event-ID); after an error answer it stops:
    // opened again, resuming after the last event received.
    if (es.readyState === EventSource.CLOSED && source === es) {
      source = undefined;
      reopenTimer = setTimeout(() => {
        reopenTimer = undefined;
        if (listeners.size > 0 && !source) open();
      }, REOPEN_MS);
    }
  };
  const onMessage = (m: MessageEvent<string>): void => {
    if (m.lastEventId) lastId = m.lastEventId;
    let event: OrganizationEvent;
    try {
      event = JSON.parse(m.data) as OrganizationEvent;
    } catch {
      return;
    }
    for (const l of [...listeners]) l(event);
  };
  for (const type of ORGANIZATION_EVENT_TYPES) es.addEventListener(type, onMessage);
}

/**
 * Hands every event of the organization's stream to a listener (opening the page's one connection if needed).
 * @param listener called once per event.
 * @returns unsubscribe.
 */
export function subscribeOrganizationEvents(listener: Listener): () => void {
  listeners.add(listener);
  if (closeTimer) clearTimeout(closeTimer);
  closeTimer = undefined;
  if (!source && !reopenTimer) open();
  return () => {
    listeners.delete(listener);
    if (listeners.size > 0) return;
    closeTimer = setTimeout(() => {
      closeTimer = undefined;
      if (listeners.size > 0) return;
      source?.close();
      source = undefined;
      if (reopenTimer) clearTimeout(reopenTimer);
      reopenTimer = undefined;
      setConnection('connecting');
    }, LINGER_MS);
  };
}

/**
 * @param type an event type.
 * @param types prefixes or whole types.
 * @returns whether the type matches one of them.
 */
export function matchesTypes(type: string, types: readonly string[]): boolean {
  return types.some((t) => type.startsWith(t));
}

/**
 * Invalidates react-query keys when matching events arrive (see the header).
 * @param types event type prefixes or whole types.
 * @param invalidate the keys to invalidate, or a function of the event giving them.
 * @returns the connection's state.
 */
export function useOrganizationEvents(
  types: readonly string[],
  invalidate: QueryKey[] | ((event: OrganizationEvent) => QueryKey[])
): { connection: OrganizationConnection } {
  const queryClient = useQueryClient();
  const [state, setState] = useState<OrganizationConnection>(connection);
  // The latest arguments, without resubscribing on every render.
  const latest = useRef({ types, invalidate });
  latest.current = { types, invalidate };

  useEffect(() => {
    const pending = new Map<string, QueryKey>();
    let flush: ReturnType<typeof setTimeout> | undefined;
    const unsubscribe = subscribeOrganizationEvents((event) => {
      const { types: t, invalidate: inv } = latest.current;
      if (!matchesTypes(event.type, t)) return;
      for (const key of typeof inv === 'function' ? inv(event) : inv) pending.set(JSON.stringify(key), key);
      flush ??= setTimeout(() => {
        flush = undefined;
        const keys = [...pending.values()];
        pending.clear();
        for (const queryKey of keys) void queryClient.invalidateQueries({ queryKey });
      }, 100);
    });
    connectionWatchers.add(setState);
    setState(connection);
    return () => {
      unsubscribe();
      connectionWatchers.delete(setState);
      if (flush) clearTimeout(flush);
    };
  }, [queryClient]);

  return { connection: state };
}
