/**
 * The final events a finish of an execution adds to its stream (activities/executionFinish.ts), each once: a retried
 * finish sees what an earlier attempt already wrote. An execution recorded with its `meta` on the record stores none:
 * the outcome write marks the record with the seq they start at (and where the reply's held-back end starts in
 * `result`), and every reader makes them from it (commands/executionFinal.ts). One recorded before (without
 * `metaOnRecord`), or one an earlier finish of an older process left some stored final events for, stores them as
 * before.
 */
import { finalEvents } from '../commands/executionFinal';
import { isExecutionStream } from '../commands/streamHeads';
import type { LoggedEvent } from '../commands/eventLog';
import type { ExecutionDoc } from '../models';
import type { FailureCode } from '../workflows/failures';
import { isFinishEvent, textDeltaEvent } from './executionEvents';

/** What the finish adds to the stream. */
export interface FinalPlan {
  /** The final events, as its readers get them (handed to this process's readers, mirrored to the chat). */
  final: LoggedEvent[];
  /** Those of them to store (none when the record holds them, but an end of the reply it cannot). */
  stored: LoggedEvent[];
  /** The record's mark of the final events it holds (`finalFrom`, `heldFrom`), set by the outcome write. */
  mark?: { finalFrom: number; heldFrom?: number };
  /** The seq after the stream's last event. */
  next: number;
}

/**
 * @param f the execution, the finish's input, the events read back (none when `known`), whether the stream's end is
 *   known without reading it, whether the outcome was already recorded, and the outcome to record.
 * @returns the final events to add.
 */
export function planFinalEvents(f: {
  exec: Pick<ExecutionDoc, '_id' | 'sessionId' | 'metaOnRecord'>;
  /** The finish's input (activities/executionFinish.ts `FinishInput`): what of it the final events are made of. */
  input: {
    status: 'completed' | 'failed' | 'cancelled';
    lastSeq?: number;
    held?: string;
    error?: string;
    errorCode?: FailureCode;
  };
  events: LoggedEvent[];
  known: boolean;
  terminal: boolean;
  text: string;
  usage: { inputTokens: number; outputTokens: number };
  error?: { message: string; code: string };
}): FinalPlan {
  const { exec, input, events, known, terminal, text, usage, error } = f;
  let seq = (known ? input.lastSeq! : (events.at(-1)?.seq ?? 0)) + 1;
  const has = (pred: (e: LoggedEvent) => boolean): boolean => events.some(pred);
  const onRecord = !terminal && exec.metaOnRecord === true && isExecutionStream(exec._id) && !has(isFinishEvent);
  const final: LoggedEvent[] = [];
  /** The final events to store (none when the record holds them, but an end of the reply it cannot). */
  let stored = final;
  /** The record's mark of the final events it holds (`finalFrom`, `heldFrom`: commands/executionFinal.ts). */
  let mark: { finalFrom: number; heldFrom?: number } | undefined;
  if (terminal) {
    // Written before the outcome was (by the finish that recorded it), or held by the record: nothing to add.
  } else if (onRecord) {
    const held = known && input.held ? input.held : '';
    // The reply's held-back end is the end of the reply (generateReply): the record's `result` holds it.
    const heldOnRecord = held !== '' && text.endsWith(held);
    stored = held !== '' && !heldOnRecord ? [{ seq: seq++, ...textDeltaEvent(held) }] : [];
    mark = { finalFrom: seq, ...(heldOnRecord ? { heldFrom: text.length - held.length } : {}) };
    final.push(
      ...stored,
      ...finalEvents({ _id: exec._id, sessionId: exec.sessionId, status: input.status, usage, error, ...mark }, text)
    );
    seq = final.at(-1)!.seq + 1;
  } else {
    // Stored, as before: the held end, then each final event (`finalEvents`' shape) an earlier attempt did not write.
    if (input.status === 'completed' && known && input.held) final.push({ seq: seq++, ...textDeltaEvent(input.held) });
    const written = (e: LoggedEvent): boolean =>
      e.event === 'message'
        ? has((w) => w.event === 'message' && isFinishEvent(w))
        : has((w) => w.event !== 'message' && isFinishEvent(w));
    const source = { _id: exec._id, sessionId: exec.sessionId, status: input.status, usage, error, finalFrom: 0 };
    for (const e of finalEvents(source, text)) if (!written(e)) final.push({ ...e, seq: seq++ });
  }
  return { final, stored, ...(mark ? { mark } : {}), next: seq };
}
