/**
 * The heads of the event log's streams (commands/eventLog.ts): the highest seq whose event, and every earlier one, is
 * written. A stream's head is in `stream_heads` (`{_id: streamId, lastSeq}`), except an execution's: its head is the
 * execution record's `streamSeq` (issue 37 lever 3), so the write that records the outcome raises the head of the
 * final events too (activities/executionFinish.ts), one write fewer per execution. Executions recorded before have no
 * `streamSeq`: their heads stay in `stream_heads` and are read there; an append to an execution stream with no record
 * (none in the service; tests append to bare streams) raises a head in `stream_heads` too.
 *
 * A stream without a head (or an execution's with `streamSeq` 0) holds its first event at most: an execution's `meta`,
 * an MCP stream's first message, written alone without raising a head.
 */
import { findByIdDirect, updateOneDirect } from '../lib/driverOps';
import { Execution, StreamEvent, StreamHead } from '../models';

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
  if (isExecutionStream(streamId)) {
    const exec = await findByIdDirect<{ streamSeq?: number }>(Execution, streamId, { streamSeq: 1 });
    if (typeof exec?.streamSeq === 'number') return exec.streamSeq > 0 ? exec.streamSeq : firstOnly(streamId);
  }
  const head = await findByIdDirect<{ lastSeq: number }>(StreamHead, streamId, { lastSeq: 1 });
  if (head) return head.lastSeq;
  return firstOnly(streamId);
}

/** No head yet: the stream is empty or holds only its first event, written without one. */
async function firstOnly(streamId: string): Promise<number> {
  return (await findByIdDirect(StreamEvent, `${streamId}:1`, { _id: 1 })) ? 1 : 0;
}
