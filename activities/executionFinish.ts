/**
 * The last activity of an execution, finishExecution: records its outcome once (final status, result, usage, the
 * final stream events: made from the record since `finalFrom`, commands/executionFinal.ts; the chat's messages and
 * status, the webhook events) and releases its session. Idempotent: a
 * retried finish writes the same things at the same keys, and one that comes after the execution was terminal
 * answers what the first recorded.
 */
import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import { withChildUsage } from '../commands/subAgents';
import { recordEvents, type EventDeps } from '../commands/serviceEvents';
import { cancelSubAgents } from '../commands/executions';
import { finishTaskRun } from '../commands/taskRuns';
import { announceAppended, insertEvents, readWritten } from '../commands/eventLog';
import { wakeStream } from '../lib/wakeups';
import { headRaise, isExecutionStream, raiseHead } from '../commands/streamHeads';
import { executionEnded } from '../lib/executionAdmission';
import { crashPoint, crashPointsArmed } from '../lib/crashPoints';
import { findByIdDirect, updateOneDirect } from '../lib/driverOps';
import { releaseConcurrency } from './executionConcurrency';
import type { Logger } from '../lib/logger';
import { executionDuration, executionsFinished } from '../lib/metrics';
import { CANCELLED_MESSAGE, FAILURES, type FailureCode } from '../workflows/failures';
import { chatRangeEnd, chatStatusAfter, mirrorsToChat, mirrorToChat } from './chatStream';
import { deliveredText } from './executionEvents';
import { planFinalEvents } from './executionFinalEvents';
import { totalUsage, type AttemptUsage } from './executionUsage';
import {
  Chat,
  ChatMessage,
  Execution,
  Session,
  TERMINAL_EXECUTION_STATUSES,
  type ExecutionDoc,
  type ExecutionStatus,
} from '../models';

/** What the workflow hands finishExecution: the outcome to record. */
export interface FinishInput {
  executionId: string;
  status: 'completed' | 'failed' | 'cancelled';
  /** Full reply (completed). */
  text?: string;
  /**
   * Seq of the last event the reply wrote (completed, from generateReply): the stream is then known without
   * reading it, since nothing but this finish writes after the reply; absent, the stream is read.
   */
  lastSeq?: number;
  /**
   * The end of the reply that generateReply held back unwritten (completed): written here as one text delta at
   * `lastSeq + 1`, with the final events.
   */
  held?: string;
  /** The completing attempt's token counts (from generateReply), written with the outcome. */
  attemptUsage?: AttemptUsage & { attempt: number | string };
  /** Failure message (failed), in the service's words (workflows/failures.ts). */
  error?: string;
  /** Failure code (failed). */
  errorCode?: FailureCode;
}

/**
 * What finishExecution recorded (histories recorded before it returned this hold nothing). It is its local activity's
 * result, kept in the workflow's history (its marker): the reply is in it only when it differs from the one the
 * finish was given (issue 37).
 */
export interface FinishOutcome {
  status: 'completed' | 'failed' | 'cancelled';
  /**
   * The reply as recorded (completed), when it is not the `text` the finish was given: an execution whose outcome was
   * already recorded (the workflow task run again), or one given no text. Absent otherwise: the reply the workflow
   * handed over is the one recorded, and is already durable on the record (`result`). Histories recorded before
   * always hold it.
   */
  text?: string;
}

/** Most execution records kept for their finish ({@link HandedOver}). */
const MAX_HANDED_OVER = 1000;

/**
 * Execution records a completed local reply (shape 3) hands to the finish that follows it in the same workflow
 * task, in this process: the finish then writes without reading the record again. Only what the finish reads is
 * used (ids, turn, createdAt, the usage of earlier attempts, which the claim read after they were saved); a
 * running execution's status is `running`. Bounded: entries whose finish runs elsewhere are dropped oldest first.
 */
export class HandedOver {
  private readonly records = new Map<string, ExecutionDoc>();

  /** @param exec the record of a reply that completed in this process. */
  put(exec: ExecutionDoc): void {
    this.records.delete(exec._id);
    this.records.set(exec._id, exec);
    if (this.records.size > MAX_HANDED_OVER) this.records.delete(this.records.keys().next().value!);
  }

  /**
   * @param executionId the execution.
   * @returns the record handed over for it, if any (once: it is dropped).
   */
  take(executionId: string): ExecutionDoc | undefined {
    const exec = this.records.get(executionId);
    this.records.delete(executionId);
    return exec;
  }
}

/**
 * Waits for every write of a step, even when one fails first (a retry must not race this attempt's writes).
 * @param work the step's writes, started together.
 * @returns their results, in order.
 * @throws the first failure, once all have settled.
 */
async function allDone<T extends readonly unknown[]>(work: T): Promise<{ -readonly [K in keyof T]: Awaited<T[K]> }> {
  const settled = await Promise.allSettled(work);
  const failed = settled.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failed) throw failed.reason;
  return settled.map((r) => (r as PromiseFulfilledResult<unknown>).value) as {
    -readonly [K in keyof T]: Awaited<T[K]>;
  };
}

/**
 * @param deps the webhook dispatcher (service events).
 * @param log the execution activities' logger.
 * @param handedOver the records completed replies of this process handed over.
 * @returns finishExecution.
 */
export function createFinishExecution(deps: EventDeps, log: Logger, handedOver: HandedOver) {
  /**
   * Records the outcome once: final status, result (partial text on failure/cancel), usage, the final stream
   * events, the chat messages, and releases the session.
   */
  return async function finishExecution(input: FinishInput): Promise<FinishOutcome> {
    // A completed local reply of this process handed its record over (read when it claimed the execution); a
    // retried finish, or one in another process, reads it.
    const handed = handedOver.take(input.executionId);
    const exec = handed ?? (await findByIdDirect<ExecutionDoc>(Execution, input.executionId));
    if (!exec) throw ApplicationFailure.nonRetryable(`Execution ${input.executionId} not found`, 'ExecutionMissing');
    // A completed reply says where its stream ends; only this finish writes after that (the same events at the
    // same seqs when it is retried), so the stream is not read back. Otherwise it is read past its head: a reply
    // that failed (or a finish that died) between an insert and its head raise left events there, which this finish
    // keeps and follows, and then raises the head over (commands/eventLog.ts readWritten).
    // A finish that comes after the outcome was recorded (the workflow task run again: a cancel that arrived as it
    // completed, or a worker dead between the outcome and the task's end) records nothing new: it reads the stream,
    // which holds the final events (written before the outcome), and takes the status and reply as recorded.
    const terminal = TERMINAL_EXECUTION_STATUSES.includes(exec.status as ExecutionStatus);
    const recordedStatus = (terminal ? exec.status : input.status) as FinishInput['status'];
    const known = !terminal && input.status === 'completed' && input.lastSeq !== undefined && input.text !== undefined;
    const events = known ? [] : await readWritten(exec._id);
    const text = terminal
      ? (exec.result ?? deliveredText(events))
      : input.status === 'completed'
        ? (input.text ?? deliveredText(events))
        : deliveredText(events);
    const { attempt: usageAttempt, ...attemptCounts } = input.attemptUsage ?? { attempt: undefined };
    const byAttempt = {
      ...(exec.usageByAttempt as Record<string, { inputTokens?: number; outputTokens?: number }>),
      ...(usageAttempt !== undefined ? { [usageAttempt]: attemptCounts } : {}),
    };
    const usage = withChildUsage(totalUsage(byAttempt), exec.childUsage);
    const now = new Date();
    // Why it failed or was cancelled, as recorded (a completed execution stores no `error`).
    const error =
      input.status === 'completed'
        ? undefined
        : input.status === 'cancelled'
          ? { message: CANCELLED_MESSAGE, code: 'cancelled' }
          : { message: input.error ?? FAILURES.internal.message, code: input.errorCode ?? FAILURES.internal.code };

    // Final events, each written once (activities/executionFinalEvents.ts): made from the record the outcome marks
    // (commands/executionFinal.ts), or stored as before.
    const {
      final,
      stored,
      mark: finalMark,
      next: seq,
    } = planFinalEvents({
      exec,
      input,
      events,
      known,
      terminal,
      text,
      usage,
      error,
    });
    const ownsChatRange = mirrorsToChat(exec);
    const chatAfter = chatStatusAfter(exec, recordedStatus, text);

    // A retried finish carries the same input, so rewriting the outcome is harmless; a terminal execution is
    // left as it is.
    // The stream's last event: this finish's last, else the last one found written (a retried finish whose final
    // events were all written before, or one that came after the outcome).
    const finalSeq = final.at(-1)?.seq ?? events.at(-1)?.seq ?? 0;
    // The outcome write raises the head of the final events when the head is on the record.
    const headWithOutcome = !terminal && finalSeq > 1 && isExecutionStream(exec._id);
    const outcome = async (): Promise<void> => {
      if (terminal) return;
      await updateOneDirect(
        Execution,
        { _id: exec._id },
        {
          ...(headWithOutcome ? headRaise(finalSeq) : {}),
          $set: {
            status: input.status,
            result: text,
            // A completed execution stores no `error` (read as null: models/Execution.ts); a terminal one is never
            // written again, so none is there to clear.
            ...(error ? { error } : {}),
            usage,
            ...(usageAttempt !== undefined ? { [`usageByAttempt.${usageAttempt}`]: attemptCounts } : {}),
            completedAt: now,
            // The final events this record holds from now on (none stored): commands/executionFinal.ts.
            ...finalMark,
          },
        }
      );
    };

    // Order matters. A session recorded before (a `sessions` document): the reply joins the history and the session
    // is free BEFORE anyone can observe the terminal status or event, so a client may send its next message as soon
    // as it sees the result. A chat holding its session: the outcome first, then the chat freed, and a client that
    // sends meanwhile takes the chat over (commands/conversations.ts `takeTurn`). The release tells the next execution
    // where its chat events start (activities/chatStream.ts).
    // The chat's status changes while the execution still holds the session, so the next execution's `working`
    // always comes after it (a retried finish that already freed the session leaves the chat alone). Otherwise (a
    // finish that reads the record) a completed reply joins the history in the same round trip that reads who holds
    // the session, while its message is written (nothing reads the history before the session is free).
    const completed = recordedStatus === 'completed';
    const assistantMessage = (): Promise<unknown> =>
      updateOneDirect(
        ChatMessage,
        { _id: `${exec._id}:assistant` },
        {
          $setOnInsert: {
            organizationId: exec.organizationId,
            chatId: exec.chatId,
            sessionId: exec.sessionId,
            executionId: exec._id,
            role: 'assistant',
            content: text || ' ',
            position: exec.turn * 2 + 1,
          },
        },
        { upsert: true }
      );
    const chatFields = { status: chatAfter.status, ...(text ? { lastMessage: text.slice(0, 500) } : {}) };
    const chatStatus = (): Promise<unknown> => updateOneDirect(Chat, { _id: exec.chatId }, { $set: chatFields });
    const release = {
      $set: { activeExecutionId: null, ...(ownsChatRange ? { chatStreamSeq: chatRangeEnd(exec, seq - 1) } : {}) },
    };
    // Final events to store (none, mostly: the record holds them) are written at once, beside the first writes,
    // without raising the stream's head: no reader sees them before the write that raises it, after the terminal
    // status (for an execution's stream, the outcome write itself: commands/streamHeads.ts; the same write that marks
    // the final events the record holds). A finish retried after they were written writes the same events at the
    // same seqs (kept as they are); `insertEvents` of none makes no round trip.
    const finalWritten = insertEvents(exec._id, stored);
    finalWritten.catch(() => undefined); // awaited below, with the first writes
    if (exec.sessionOnChat) {
      // The session is on the chat (commands/conversations.ts), and the reply on the record (`result`: no message
      // document, commands/chatMessageReads.ts). So the outcome comes first: the next turn reads the reply from it.
      // Then the chat's status, the release and the history in one write, made only while this execution holds the
      // chat: a retried finish that already freed it leaves the chat alone, as does one whose chat the next turn
      // took over meanwhile (a terminal execution's session counts free: conversations.ts `takeTurn`, which writes
      // what this write would, should this finish never come).
      await allDone([finalWritten] as const);
      await outcome();
      // The fault tests kill a worker here: the final events part of the stream (made from the record the outcome
      // wrote: commands/executionFinal.ts), the chat held. The workflow task runs again: its reply finds the
      // execution ended (no model call), its finish frees the chat.
      if (crashPointsArmed) await crashPoint('finish:final-events');
      await updateOneDirect(
        Chat,
        { _id: exec.chatId, activeExecutionId: exec._id },
        {
          $set: { ...chatFields, ...release.$set },
          ...(completed ? { $addToSet: { history: exec._id } } : {}),
        }
      );
    } else if (handed) {
      // The finish right after this process's own reply: no finish of this execution ran before it (a retried or
      // repeated one reads the record), and only a finish frees a session, so the session is still held by this
      // execution without reading it. The chat's status goes with the message; then the reply joins the history in
      // the same write that frees the session (the message is already there when the next turn reads the history).
      await allDone([completed ? assistantMessage() : undefined, chatStatus(), finalWritten] as const);
      // The fault tests kill a worker here: final events written, no head over them, the session held.
      if (crashPointsArmed) await crashPoint('finish:final-events');
      await updateOneDirect(
        Session,
        { _id: exec.sessionId, activeExecutionId: exec._id },
        completed ? { ...release, $addToSet: { history: exec._id } } : release
      );
    } else {
      const [, session] = await allDone([
        completed ? assistantMessage() : undefined,
        completed
          ? // (no projection: the embedded database's findAndModify does not take one)
            Session.findOneAndUpdate({ _id: exec.sessionId }, { $addToSet: { history: exec._id } }).lean()
          : Session.findById(exec.sessionId).select({ activeExecutionId: 1 }).lean(),
        finalWritten,
      ] as const);
      if (session?.activeExecutionId === exec._id) await chatStatus();
      await updateOneDirect(Session, { _id: exec.sessionId, activeExecutionId: exec._id }, release);
    }
    // A session recorded before (a `sessions` document): the reply is a message document, written with the release
    // and before the outcome, as before (only a chat holding its session can be taken over).
    if (!exec.sessionOnChat) await outcome();

    // The final stream events and the service events (webhooks, keyed so a retried finish records nothing new; a
    // cancelled execution has none) both follow the terminal status, and are written together.
    const finalStatus = terminal ? (exec.status as ExecutionStatus) : input.status;
    if (finalSeq > 1 && !headWithOutcome) await raiseHead(exec._id, finalSeq);
    announceAppended(exec._id, final, await finalWritten);
    if (final.length === 0 && finalSeq > 1) wakeStream(exec._id, finalSeq);
    const streamed = async (): Promise<void> => {
      if (ownsChatRange) await mirrorToChat(exec, [...events, ...final], recordedStatus, text);
    };
    await allDone([
      streamed(),
      recordEvents(
        exec.organizationId,
        [
          ...(recordedStatus !== 'cancelled' && (finalStatus === 'completed' || finalStatus === 'failed')
            ? [
                {
                  type: finalStatus === 'completed' ? ('execution.completed' as const) : ('execution.failed' as const),
                  data: {
                    executionId: exec._id,
                    agentId: exec.agentId,
                    chatId: exec.chatId,
                    status: finalStatus,
                    ...(finalStatus === 'failed'
                      ? {
                          error: {
                            message: input.error ?? FAILURES.internal.message,
                            code: input.errorCode ?? FAILURES.internal.code,
                          },
                        }
                      : {}),
                    usage: { input_tokens: usage.inputTokens, output_tokens: usage.outputTokens },
                  },
                  key: `${exec._id}:finished`,
                },
              ]
            : []),
          {
            type: 'chat.status_changed',
            data: {
              chatId: exec.chatId,
              status: chatAfter.status,
              executionId: exec._id,
              ...(chatAfter.review ? { review: chatAfter.review } : {}),
            },
            key: `${exec._id}:chat-status:final`,
          },
        ],
        deps
      ),
    ]);

    // A task this execution runs moves on with it (POST /api/v1/tasks/{id}/run; commands/taskRuns.ts).
    if (exec.taskId) await finishTaskRun(deps, exec, finalStatus as FinishInput['status']);

    // Sub-agents still running stop with their parent (commands/subAgents.ts).
    if (recordedStatus !== 'completed')
      await Promise.resolve()
        .then(() => cancelSubAgents(Context.current().client, exec))
        .catch((err: unknown) => log.warn({ err, executionId: exec._id }, 'could not cancel sub-agents'));
    if (!terminal) {
      executionsFinished.inc({ status: finalStatus });
      executionDuration.observe({ status: finalStatus }, (Date.now() - new Date(exec.createdAt).getTime()) / 1000);
    }
    log.info({ executionId: exec._id, status: input.status, usage }, 'execution finished');
    // Its concurrency keys go to the next in their lines (activities/executionConcurrency.ts).
    if (exec.concurrency?.length) await releaseConcurrency(exec, log);
    // Its admission slot, when this process admitted it (lib/executionAdmission.ts), is free for the next one.
    executionEnded(exec._id);
    // The outcome as recorded: a finish that came after the execution was already terminal (the workflow task was
    // run again because a cancel arrived as it completed) answers what the first one recorded. The reply only when
    // it is not the one this finish was given: the history's marker does not repeat it (the reply's marker holds it,
    // the record too).
    const answered = terminal ? (exec.result ?? '') : text;
    return finalStatus === 'completed'
      ? { status: finalStatus, ...(answered !== input.text ? { text: answered } : {}) }
      : { status: finalStatus as 'failed' | 'cancelled' };
  };
}
