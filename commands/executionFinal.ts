/**
 * An execution stream's final events (issue 37 lever 3, after its `meta`: commands/executionMeta.ts), in one place:
 * the end of the reply that was still held back when the model's stream ended (a text delta), the assistant `message`
 * and `result` of a completed execution, the `error` of a failed or cancelled one. Everything in them is on the
 * execution record once its finish has recorded the outcome (`result`, `usage`, `error`, `sessionId`), so the finish
 * stores none of them (activities/executionFinish.ts): its outcome write marks the record with the seq they start at
 * (`finalFrom`) and, when the reply's end was held back, where that end starts in `result` (`heldFrom`), and raises
 * the head over them. Every reader of the stream (commands/eventLog.ts, through the head read of
 * commands/streamHeads.ts, which reads the record anyway) makes them from the record. The reply's text is read only
 * when a reader's range covers an event that carries it (the held delta, the assistant message): a second point read
 * of the record, so the head read, made on every wake-up, stays small. Executions finished before keep their stored
 * final events and are read as before (docs/decisions.md "The stream's final events on the execution record").
 */
import { findByIdDirect } from '../lib/driverOps';
import { FAILURES } from '../workflows/failures';
import { Execution, type LoggedEvent } from '../models';
import { textDeltaEvent } from './executionSteps';

/** What a head read of an execution stream projects to know its final events (besides `sessionId`: META_PROJECTION). */
export const FINAL_PROJECTION = { finalFrom: 1, heldFrom: 1, status: 1, usage: 1, error: 1 } as const;

/** The fields of a finished execution record its final events are made of (the reply's text apart). */
export interface FinalSource {
  _id: string;
  sessionId?: string;
  status?: string;
  /** The seq of its first final event: set by a finish that stores none (absent on executions finished before). */
  finalFrom?: number;
  /** Where, in `result`, the text delta the finish made of the reply's held-back end starts (absent: none). */
  heldFrom?: number;
  usage?: { inputTokens?: number; outputTokens?: number };
  error?: { message?: string; code?: string } | null;
}

/** The final events of an execution that its record holds, read on demand ({@link recordedFinal}). */
export interface RecordedFinal {
  /** The seq of the first. */
  from: number;
  /** The seq of the last (the stream's head). */
  to: number;
  /**
   * @param from the first seq wanted.
   * @param to the last.
   * @returns the final events in that range, in seq order (reading the reply's text only when one of them carries it).
   */
  events(from: number, to: number): Promise<LoggedEvent[]>;
}

/**
 * The final events of a finished execution, as every client gets them.
 * @param exec the record's fields (`finalFrom` set, status terminal).
 * @param text the reply (`result`), when one of the events wanted carries it; else the events that carry it are left out.
 * @returns the events, in seq order, from `finalFrom`.
 */
export function finalEvents(exec: FinalSource & { finalFrom: number }, text?: string): LoggedEvent[] {
  let seq = exec.finalFrom;
  const out: LoggedEvent[] = [];
  if (exec.status === 'completed') {
    if (exec.heldFrom !== undefined) {
      if (text !== undefined) out.push({ seq, ...textDeltaEvent(text.slice(exec.heldFrom)) });
      seq++;
    }
    if (text !== undefined)
      out.push({ seq, event: 'message', data: { messageType: 'assistant', content: [{ type: 'text', text }] } });
    seq++;
    out.push({
      seq,
      event: 'result',
      data: {
        sessionId: exec.sessionId,
        usage: { input_tokens: exec.usage?.inputTokens ?? 0, output_tokens: exec.usage?.outputTokens ?? 0 },
      },
    });
    return out;
  }
  const error = exec.error ?? {};
  out.push({
    seq,
    event: 'error',
    data: {
      message: error.message ?? FAILURES.internal.message,
      // A run a spent budget stopped says so (docs/spend.md).
      ...(error.code === FAILURES.budgetReached.code ? { reason: FAILURES.budgetReached.code } : {}),
    },
  });
  return out;
}

/**
 * @param exec a finished execution record.
 * @returns how many final events it holds (the held delta, the assistant message and `result`; or `error`).
 */
export function finalCount(exec: Pick<FinalSource, 'status' | 'heldFrom'>): number {
  return exec.status === 'completed' ? (exec.heldFrom !== undefined ? 3 : 2) : 1;
}

/**
 * @param exec an execution record as a head read projects it ({@link FINAL_PROJECTION}).
 * @returns its final events when the record holds them, else undefined (running, or finished before: stored).
 */
export function recordedFinal(exec: FinalSource): RecordedFinal | undefined {
  const { finalFrom } = exec;
  if (typeof finalFrom !== 'number' || !['completed', 'failed', 'cancelled'].includes(exec.status ?? '')) return;
  const source = { ...exec, finalFrom };
  // The events that carry the reply's text come first: the held delta and the assistant message.
  const textTo = exec.status === 'completed' ? finalFrom + finalCount(exec) - 2 : finalFrom - 1;
  let text: Promise<string> | undefined;
  const readText = (): Promise<string> =>
    (text ??= findByIdDirect<{ result?: string | null }>(Execution, exec._id, { result: 1 }).then(
      (r) => r?.result ?? ''
    ));
  return {
    from: finalFrom,
    to: finalFrom + finalCount(exec) - 1,
    async events(from, to) {
      const made = finalEvents(source, from <= textTo ? await readText() : undefined);
      return made.filter((e) => e.seq >= from && e.seq <= to);
    },
  };
}
