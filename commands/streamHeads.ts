/**
 * The heads of the event log's streams (commands/eventLog.ts): the highest seq whose event, and every earlier one, is
 * written. A stream's head is in `stream_heads` (`{_id: streamId, lastSeq}`), except an execution's: its head is the
 * execution record's `streamSeq` (issue 37 lever 3), so the write that records the outcome raises the head of the
 * final events too (activities/executionFinish.ts), one write fewer per execution. Executions recorded before have no
 * `streamSeq`: their heads stay in `stream_heads` and are read there; an append to an execution stream with no record
 * (none in the service; tests append to bare streams) raises a head in `stream_heads` too.
 *
 * A stream without a head (or an execution's with `streamSeq` 0) holds its first event at most: an MCP stream's first
 * message, an execution's `meta` written alone without raising a head (executions recorded before `metaOnRecord`).
 *
 * An execution recorded with `metaOnRecord` stores no `meta` event: the head read projects what makes it
 * (commands/executionMeta.ts), so the stream's head is at least 1 and its event 1 comes from the record, with no
 * extra read ({@link readHead}). A finished one recorded with `finalFrom` stores no final events either: the same read
 * projects what makes them (commands/executionFinal.ts), the reply's text apart, read only by a reader that reaches it.
 */
import { findByIdDirect, updateOneDirect } from '../lib/driverOps';
import { Execution, StreamEvent, StreamHead, type LoggedEvent } from '../models';
import { FINAL_PROJECTION, recordedFinal, type FinalSource, type RecordedFinal } from './executionFinal';
import { META_PROJECTION, recordedMeta, type MetaSource } from './executionMeta';

/** A stream's head as read: its seq, and its event 1 when that is not stored but held by the record. */
export interface Head {
  seq: number;
  /** The stream's first event, from its execution's record (`metaOnRecord`): the readers yield it as seq 1. */
  first?: LoggedEvent;
  /**
   * The stream's final events, from its execution's record (`finalFrom`: commands/executionFinal.ts): the readers
   * yield them at their seqs, up to the head, instead of reading them from `stream_events`.
   */
  final?: RecordedFinal;
}

/**
 * @param streamId a stream.
 * @returns whether it is an execution's stream, whose head is on its record (execution ids: lib/ids.ts).
 */
export const isExecutionStream = (streamId: string): boolean => streamId.startsWith('exec-');

/**
 * The update of an execution record that raises its stream's head, to merge into another write of the record.
 * @param seq the seq every event up to which is written.
 * @returns the operator.
 */
export const headRaise = (seq: number): { $max: { streamSeq: number } } => ({ $max: { streamSeq: seq } });

/**
 * Raises a stream's head (never lowers it), once its events up to `seq` are written.
 * @param streamId the stream.
 * @param seq the new head.
 * @param alsoSet fields of the execution record set by the same update (an execution's stream with its head on its
 *   record only: the reply's token counts ride its head raise, activities/executionUsage.ts `headFields`).
 * @returns whether `alsoSet` was written (false: the head is in `stream_heads`, the fields were not set).
 */
export async function raiseHead(streamId: string, seq: number, alsoSet?: Record<string, unknown>): Promise<boolean> {
  if (isExecutionStream(streamId)) {
    const { matchedCount } = await updateOneDirect(
      Execution,
      { _id: streamId },
      alsoSet ? { ...headRaise(seq), $set: alsoSet } : headRaise(seq)
    );
    if (matchedCount > 0) return true;
  }
  await updateOneDirect(StreamHead, { _id: streamId }, { $max: { lastSeq: seq } }, { upsert: true });
  return false;
}

/**
 * @param streamId the stream.
 * @returns the highest seq written (0 when empty).
 */
export async function lastSeq(streamId: string): Promise<number> {
  return (await readHead(streamId)).seq;
}

/**
 * Reads a stream's head; an execution's, with its `meta` event and final events when its record holds them (the same
 * read by id).
 * @param streamId the stream.
 * @returns the highest seq written (0 when empty), the stream's event 1 when it is the record's, and its final events
 *   when they are the record's.
 */
export async function readHead(streamId: string): Promise<Head> {
  if (isExecutionStream(streamId)) {
    type Projected = Partial<MetaSource> & FinalSource & { _id: string; streamSeq?: number; metaOnRecord?: boolean };
    const exec = await findByIdDirect<Projected>(Execution, streamId, {
      streamSeq: 1,
      ...META_PROJECTION,
      ...FINAL_PROJECTION,
    });
    const first = exec ? recordedMeta(exec) : undefined;
    // Its `meta` on the record: event 1 is there from the record's insert on, so the head is at least 1. Its final
    // events, once its finish recorded the outcome (the same write raised the head over them).
    if (first) {
      const final = recordedFinal(exec!);
      return { seq: Math.max(exec?.streamSeq ?? 0, 1), first, ...(final ? { final } : {}) };
    }
    if (typeof exec?.streamSeq === 'number')
      return { seq: exec.streamSeq > 0 ? exec.streamSeq : await firstOnly(streamId) };
  }
  const head = await findByIdDirect<{ lastSeq: number }>(StreamHead, streamId, { lastSeq: 1 });
  if (head) return { seq: head.lastSeq };
  return { seq: await firstOnly(streamId) };
}

/** No head yet: the stream is empty or holds only its first event, written without one. */
async function firstOnly(streamId: string): Promise<number> {
  return (await findByIdDirect(StreamEvent, `${streamId}:1`, { _id: 1 })) ? 1 : 0;
}
