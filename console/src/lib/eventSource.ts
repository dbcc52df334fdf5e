/**
 * One server-sent-event stream of the service, opened with the browser's EventSource (the session cookie goes with
 * it): the named events it carries, parsed, with their `id` (the stream's seq, `lastEventId`), and the connection's
 * state. EventSource reconnects by itself after a dropped connection and resumes with `Last-Event-ID`; a stream the
 * client has fully read answers 204, which ends it (`closed`). Used by the chat stream (useChatStream.ts) and the
 * job stream (useJobStream.ts).
 */

export type Connection = 'connecting' | 'live' | 'reconnecting' | 'closed';

/** One event of a stream, as EventSource gives it (`id` = lastEventId, data parsed). */
export interface StreamEvent {
  id: number;
  event: string;
  data: Record<string, unknown>;
}

/**
 * Streams number their events 1, 2, 3 … without gaps: one at or below the last applied is a repeat (a replay after a
 * reconnection) and is ignored.
 * @param lastSeq the id of the last event applied (0 for none).
 * @param e an event.
 * @returns whether it is new.
 */
export function isNewEvent(lastSeq: number, e: StreamEvent): boolean {
  return Number.isFinite(e.id) && e.id > lastSeq;
}

export interface StreamHandlers {
  onEvent: (event: StreamEvent) => void;
  onConnection: (connection: Connection) => void;
}

/**
 * @param url the stream's path (same origin).
 * @param names the event names to listen to.
 * @param handlers what receives the events and the connection's state.
 * @returns a function that closes the stream.
 */
export function openEventStream(url: string, names: readonly string[], handlers: StreamHandlers): () => void {
  handlers.onConnection('connecting');
  const source = new EventSource(url);
  source.onopen = () => handlers.onConnection('live');
  source.onerror = () => handlers.onConnection(source.readyState === EventSource.CLOSED ? 'closed' : 'reconnecting');
  for (const name of names) {
    source.addEventListener(name, (m: MessageEvent<string>) => {
      let data: Record<string, unknown>;
      try {
        data = JSON.parse(m.data) as Record<string, unknown>;
      } catch {
        return;
      }
      handlers.onEvent({ id: Number(m.lastEventId), event: name, data });
    });
  }
  return () => source.close();
}
