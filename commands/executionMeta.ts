/**
 * An execution stream's first event, `meta` (seq 1: `{executionId, chatId, sessionId}`), in one place (issue 37 lever
 * 3). It says nothing the execution record does not already hold, so executions recorded since carry
 * `metaOnRecord: true` and no stored `meta` event: every reader of the stream (commands/eventLog.ts, through the
 * head read of commands/streamHeads.ts, which reads the record anyway) yields it as seq 1 from the record, and reads
 * the stored events from seq 2. The api's start writes one document fewer (the execution alone), a rerun's two
 * instead of three. Executions recorded before keep their stored `meta` and are read as before (docs/decisions.md
 * "The stream's meta event on the execution record").
 */
import type { LoggedEvent } from '../models';

/** The fields of an execution record the `meta` event is made of. */
export interface MetaSource {
  _id: string;
  chatId: string;
  sessionId: string;
}

/** What a head read of an execution stream projects to make its `meta` event ({@link recordedMeta}). */
export const META_PROJECTION = { chatId: 1, sessionId: 1, metaOnRecord: 1 } as const;

/** The mark of the executions whose `meta` event is their record's, not stored: set on every execution recorded. */
export const META_ON_RECORD = { metaOnRecord: true } as const;

/**
 * @param exec the execution's ids.
 * @returns the first event of its stream, as every client gets it (seq 1).
 */
export function metaEvent(exec: MetaSource): LoggedEvent {
  return { seq: 1, event: 'meta', data: { executionId: exec._id, chatId: exec.chatId, sessionId: exec.sessionId } };
}

/**
 * @param exec an execution record, with at least {@link META_PROJECTION}.
 * @returns its `meta` event when the record holds it (not stored in the stream), else undefined (an execution
 *   recorded before: its `meta` is stored as seq 1).
 */
export function recordedMeta(
  exec: Partial<MetaSource> & { _id: string; metaOnRecord?: boolean }
): LoggedEvent | undefined {
  if (exec.metaOnRecord !== true || exec.chatId === undefined || exec.sessionId === undefined) return undefined;
  return metaEvent({ _id: exec._id, chatId: exec.chatId, sessionId: exec.sessionId });
}
