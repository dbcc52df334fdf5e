/**
 * Activities of the agentExecution workflow. All are idempotent under Temporal's at-least-once execution:
 * status moves are conditional, events have deterministic seqs, messages deterministic ids.
 */
import { Context } from '@temporalio/activity';
import { ApplicationFailure, CancelledFailure } from '@temporalio/common';
import type { Config } from '../lib/config';
import { appendEvents, CoalescingWriter, readEvents, type LoggedEvent } from '../lib/eventLog';
import type { Logger } from '../lib/logger';
import {
  createProvider,
  ProviderAbortedError,
  ProviderError,
  ProviderIdleError,
  ProviderNotConfiguredError,
  withIdleTimeout,
  type ModelMessage,
} from '../lib/providers';
import { FAILURES, rejectedMessage, type FailureCode } from '../workflows/failures';
import { JOB_PROTOCOL_PROMPT } from '../workflows/jobStates';
import { chatRangeEnd, chatStatusAfter, mirrorEvent, mirrorsToChat, mirrorToChat } from './chatStream';
import { recordEvent } from '../commands/serviceEvents';
import {
  Agent,
  Chat,
  chatStatusOf,
  ChatMessage,
  Execution,
  Session,
  TERMINAL_EXECUTION_STATUSES,
  type ExecutionDoc,
  type ExecutionStatus,
} from '../models';

/** Largest reply requested from a model. */
const MAX_OUTPUT_TOKENS = 4096;
/** How often the model activity heartbeats (cancellation and dead workers are noticed through heartbeats). */
const HEARTBEAT_MS = 100;
/**
 * Longest wait between two heartbeats the worker actually sends (worker option `maxHeartbeatThrottleInterval`): a
 * cancellation reaches the activity in a heartbeat's response, so this bounds how fast a cancel aborts the model
 * request. Four heartbeat calls a second per running reply.
 */
export const HEARTBEAT_THROTTLE = '250 milliseconds';
/**
 * How often the running attempt's token counts are saved (besides at once when the input count arrives, and at the
 * end): what a worker crash can lose of an attempt's count.
 */
const USAGE_SAVE_MS = 500;

export interface ExecutionActivityDeps {
  logger: Logger;
  config: Readonly<Config>;
}

export interface FinishInput {
  executionId: string;
  status: 'completed' | 'failed' | 'cancelled';
  /** Full reply (completed). */
  text?: string;
  /** Failure message (failed), in the service's words (workflows/failures.ts). */
  error?: string;
  /** Failure code (failed). */
  errorCode?: FailureCode;
}

/** Token counts of one provider attempt, as saved on the execution (`usageByAttempt.<attempt>`). */
interface AttemptUsage {
  inputTokens: number;
  outputTokens: number;
  /** false while the provider has not reported its final output count: outputTokens counts the text deltas. */
  final: boolean;
}

/**
 * A failure for the workflow: retryable or not, typed with a client code, its message in the service's words.
 * @param failure the code and client message.
 * @param retryable whether Temporal may retry the attempt.
 * @param message the client message when it differs from the code's.
 * @returns the ApplicationFailure to throw.
 */
function failure(
  failure: { code: FailureCode; message: string },
  retryable: boolean,
  message = failure.message
): ApplicationFailure {
  return ApplicationFailure.create({ type: failure.code, message, nonRetryable: !retryable });
}

/**
 * Translates a provider error into the service's words (the provider's own text stays in the logs, except the
 * one-line explanation of a rejection, which the client needs to fix its request).
 * @param err the provider error.
 * @param delivered whether text of this reply was already delivered (then nothing is retried).
 * @returns the ApplicationFailure to throw.
 */
export function providerFailure(err: ProviderError, delivered: boolean): ApplicationFailure {
  if (err instanceof ProviderNotConfiguredError) return failure(FAILURES.providerNotConfigured, false);
  if (err instanceof ProviderIdleError) return failure(FAILURES.providerTimeout, !delivered);
  if (!err.transient) return failure(FAILURES.providerRejected, false, rejectedMessage(err.providerMessage));
  if (delivered) return failure(FAILURES.providerInterrupted, false);
  return failure(FAILURES.providerUnavailable, true);
}

/** The v1 `message` event carrying a text delta (SPEC "Agent execution stream"). */
export function textDeltaEvent(text: string): Omit<LoggedEvent, 'seq'> {
  return { event: 'message', data: { messageType: 'stream_event', delta: { type: 'text_delta', text } } };
}

function isTextDelta(e: LoggedEvent): boolean {
  return e.event === 'message' && (e.data as { messageType?: string }).messageType === 'stream_event';
}

/** @returns the text delivered so far in an execution's stream. */
function deliveredText(events: LoggedEvent[]): string {
  return events
    .filter(isTextDelta)
    .map((e) => (e.data as { delta: { text: string } }).delta.text)
    .join('');
}

function totalUsage(byAttempt: Record<string, { inputTokens?: number; outputTokens?: number }>): {
  inputTokens: number;
  outputTokens: number;
} {
  let inputTokens = 0;
  let outputTokens = 0;
  for (const u of Object.values(byAttempt ?? {})) {
    inputTokens += u.inputTokens ?? 0;
    outputTokens += u.outputTokens ?? 0;
  }
  return { inputTokens, outputTokens };
}

/**
 * The completed earlier turns of a session, read by id (the session lists its completed executions in order).
 * @param sessionId the session.
 * @param currentExecutionId the execution being generated (excluded).
 * @returns user and assistant messages in order.
 */
async function sessionHistory(sessionId: string, currentExecutionId: string): Promise<ModelMessage[]> {
  const session = await Session.findById(sessionId).select({ history: 1 }).lean();
  const ids = (session?.history ?? []).filter((id) => id !== currentExecutionId);
  const pairs = await Promise.all(
    ids.map((id) =>
      Promise.all([ChatMessage.findById(`${id}:user`).lean(), ChatMessage.findById(`${id}:assistant`).lean()])
    )
  );
  return pairs.flatMap(([user, assistant]) =>
    user && assistant
      ? [
          { role: 'user' as const, content: user.content },
          { role: 'assistant' as const, content: assistant.content },
        ]
      : []
  );
}

/**
 * pending → running, and the chat shows it is working. Only this activity moves a pending execution (the
 * caller read `pending` just before), so plain updates by `_id` are safe and stay index lookups on every server.
 * Activities address records by the ids stored on their execution, which the api wrote for one organization.
 */
async function markRunning(exec: ExecutionDoc): Promise<void> {
  await Execution.updateOne({ _id: exec._id }, { $set: { status: 'running', startedAt: new Date() } });
  await Chat.updateOne({ _id: exec.chatId }, { $set: { status: chatStatusOf('running') } });
  await recordEvent({
    type: 'chat.status_changed',
    organizationId: exec.organizationId,
    data: { chatId: exec.chatId, status: chatStatusOf('running'), executionId: exec._id },
    key: `${exec._id}:chat-status:running`,
  });
}
/**
 * @param deps logger and configuration (provider keys).
 * @returns the execution activities.
 */
export function createExecutionActivities(deps: ExecutionActivityDeps) {
  const log = deps.logger.child({ component: 'executions' });

  /**
   * Streams the model reply into the event log. After a worker died mid-stream, the retry continues the reply
   * after the text already delivered (prefill), so clients never see text twice.
   */
  async function generateReply(executionId: string): Promise<{ text: string }> {
    const ctx = Context.current();
    const exec = await Execution.findById(executionId).lean<ExecutionDoc>();
    if (!exec) throw ApplicationFailure.nonRetryable(`Execution ${executionId} not found`, 'ExecutionMissing');
    // The api marks an execution whose workflow start failed (Temporal away) as failed; if that start reached the
    // server after all, the workflow must not bring the execution back to life.
    if (exec.error?.code === 'start_failed')
      throw ApplicationFailure.nonRetryable('The execution could not be started', 'StartFailed');
    if (exec.status === 'pending') await markRunning(exec);
    // The system prompt is read now, so an update applies to the next execution.
    const agent = await Agent.findById(exec.agentId).select({ systemPrompt: 1 }).lean();
    if (!agent) throw failure(FAILURES.agentNotFound, false);
    const messages: ModelMessage[] = [
      ...(await sessionHistory(exec.sessionId, exec._id)),
      { role: 'user', content: exec.input?.message ?? '' },
    ];

    const existing = await readEvents(executionId);
    const prefill = deliveredText(existing);
    // The chat stream gets the user message, the working status and whatever an earlier attempt delivered, then
    // each delta right after it is written to the execution's own stream.
    const mirror = mirrorsToChat(exec);
    if (mirror) await mirrorToChat(exec, existing);
    const writer = new CoalescingWriter(
      executionId,
      (existing.at(-1)?.seq ?? 0) + 1,
      textDeltaEvent,
      undefined,
      undefined,
      mirror ? (e) => mirrorEvent(exec, e) : undefined
    );
    const provider = createProvider({ provider: exec.provider as 'anthropic', model: exec.model }, deps.config);
    const attempt = ctx.info.attempt;
    const beat = setInterval(() => ctx.heartbeat(), HEARTBEAT_MS);
    const usage = trackUsage(executionId, attempt);
    // The request is aborted by a cancellation (heartbeat) or by the idle timeout.
    const idle = new AbortController();
    const signal = AbortSignal.any([ctx.cancellationSignal, idle.signal]);
    if (attempt > 1) log.info({ executionId, attempt, resumedChars: prefill.length }, 'resuming reply');
    try {
      const events = provider.stream({
        model: exec.model,
        // A job's iteration is also told how to ask for review or input (workflows/jobStates.ts).
        system: exec.jobId ? `${agent.systemPrompt}\n\n${JOB_PROTOCOL_PROMPT}` : agent.systemPrompt,
        messages,
        prefill: prefill || undefined,
        maxTokens: MAX_OUTPUT_TOKENS,
        signal,
        note: exec.modelNote ?? undefined,
      });
      for await (const ev of withIdleTimeout(events, deps.config.modelIdleTimeoutSeconds * 1000, () => idle.abort())) {
        if (ev.type === 'text') {
          if (ev.text) {
            writer.text(ev.text);
            usage.delta();
          }
        } else usage.report(ev.inputTokens, ev.outputTokens);
      }
      await writer.flush();
      return { text: prefill + writer.written };
    } catch (err) {
      await writer.flush().catch(() => undefined);
      const delivered = prefill + writer.written !== '';
      if (err instanceof ProviderIdleError) {
        log.warn({ executionId, attempt, idleMs: err.idleMs, delivered }, 'model provider went silent');
        throw providerFailure(err, delivered);
      }
      const details = ctx.cancellationDetails;
      if (ctx.cancellationSignal.aborted || err instanceof ProviderAbortedError) {
        if (details?.workerShutdown) throw ApplicationFailure.retryable('Worker shutting down', 'WorkerShutdown');
        throw new CancelledFailure('Execution cancelled');
      }
      if (err instanceof ProviderError) {
        // The provider's own words (possibly a raw error body) stay here, keyed by the execution.
        log.warn(
          { executionId, attempt, status: err.status, transient: err.transient, delivered, providerError: err.message },
          'model call failed'
        );
        throw providerFailure(err, delivered);
      }
      log.warn({ executionId, attempt, err }, 'reply failed');
      throw err;
    } finally {
      clearInterval(beat);
      await usage.close();
    }
  }

  /**
   * Saves one attempt's token counts on the execution as they become known, so that an attempt cut short (its
   * worker killed) still counts what it was billed for: the input tokens at once when the provider reports them,
   * the output tokens every USAGE_SAVE_MS and at the end. Until the provider reports its final output count
   * (Anthropic and OpenAI do so only at the end of a reply), the output count is the number of text deltas
   * received: each carries at least one token, so it never counts more than was generated [docs/decisions.md
   * "Usage"].
   * @param executionId the execution.
   * @param attempt the activity attempt (the key in `usageByAttempt`).
   * @returns report/delta/close.
   */
  function trackUsage(executionId: string, attempt: number) {
    const current: AttemptUsage = { inputTokens: 0, outputTokens: 0, final: false };
    let deltas = 0;
    let dirty = false;
    let chain: Promise<void> = Promise.resolve();
    const save = (): Promise<void> => {
      if (!dirty) return chain;
      dirty = false;
      const snapshot = { ...current };
      chain = chain
        .then(() => Execution.updateOne({ _id: executionId }, { $set: { [`usageByAttempt.${attempt}`]: snapshot } }))
        .then(() => undefined)
        .catch((e: unknown) => log.warn({ err: e, executionId, attempt }, 'could not record usage'));
      return chain;
    };
    const timer = setInterval(() => void save(), USAGE_SAVE_MS);
    return {
      report(inputTokens?: number, outputTokens?: number): void {
        if (inputTokens !== undefined) current.inputTokens = inputTokens;
        if (outputTokens !== undefined) {
          current.outputTokens = outputTokens;
          current.final = true;
        }
        dirty = true;
        if (inputTokens !== undefined) void save();
      },
      delta(): void {
        deltas++;
        if (!current.final) {
          current.outputTokens = deltas;
          dirty = true;
        }
      },
      async close(): Promise<void> {
        clearInterval(timer);
        dirty = true;
        await save();
      },
    };
  }

  /**
   * Records the outcome once: final status, result (partial text on failure/cancel), usage, the final stream
   * events, the chat messages, and releases the session.
   */
  async function finishExecution(input: FinishInput): Promise<void> {
    const exec = await Execution.findById(input.executionId).lean<ExecutionDoc>();
    if (!exec) throw ApplicationFailure.nonRetryable(`Execution ${input.executionId} not found`, 'ExecutionMissing');
    const events = await readEvents(exec._id);
    const text = input.status === 'completed' ? (input.text ?? deliveredText(events)) : deliveredText(events);
    const usage = totalUsage(exec.usageByAttempt as Record<string, { inputTokens?: number; outputTokens?: number }>);
    const now = new Date();

    // Final events, each written once (a retried finish sees what an earlier attempt already wrote).
    let seq = (events.at(-1)?.seq ?? 0) + 1;
    const has = (pred: (e: LoggedEvent) => boolean): boolean => events.some(pred);
    const final: LoggedEvent[] = [];
    if (input.status === 'completed') {
      if (!has((e) => e.event === 'message' && (e.data as { messageType?: string }).messageType === 'assistant')) {
        final.push({
          seq: seq++,
          event: 'message',
          data: { messageType: 'assistant', content: [{ type: 'text', text }] },
        });
      }
      if (!has((e) => e.event === 'result' || e.event === 'error')) {
        final.push({
          seq: seq++,
          event: 'result',
          data: {
            sessionId: exec.sessionId,
            usage: { input_tokens: usage.inputTokens, output_tokens: usage.outputTokens },
          },
        });
      }
    } else if (!has((e) => e.event === 'result' || e.event === 'error')) {
      final.push({
        seq: seq++,
        event: 'error',
        data: {
          message: input.status === 'cancelled' ? 'Execution cancelled' : (input.error ?? FAILURES.internal.message),
        },
      });
    }
    const ownsChatRange = mirrorsToChat(exec);
    const chatAfter = chatStatusAfter(exec, input.status, text);

    // Order matters: the reply joins the history and the session is free BEFORE anyone can observe the
    // terminal status or event, so a client may send its next message as soon as it sees the result. The same
    // write tells the next execution where its chat events start (activities/chatStream.ts).
    if (input.status === 'completed') {
      await ChatMessage.updateOne(
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
      await Session.updateOne({ _id: exec.sessionId }, { $addToSet: { history: exec._id } });
    }
    // The chat's status changes while the execution still holds the session, so the next execution's `working`
    // always comes after it (a retried finish that already freed the session leaves the chat alone).
    const session = await Session.findById(exec.sessionId).select({ activeExecutionId: 1 }).lean();
    if (session?.activeExecutionId === exec._id)
      await Chat.updateOne(
        { _id: exec.chatId },
        {
          $set: {
            status: chatAfter.status,
            ...(text ? { lastMessage: text.slice(0, 500) } : {}),
          },
        }
      );
    await Session.updateOne(
      { _id: exec.sessionId, activeExecutionId: exec._id },
      {
        $set: {
          activeExecutionId: null,
          ...(ownsChatRange ? { chatStreamSeq: chatRangeEnd(exec, seq - 1) } : {}),
        },
      }
    );

    // A retried finish carries the same input, so rewriting the outcome is harmless; a terminal execution is
    // left as it is.
    const terminal = TERMINAL_EXECUTION_STATUSES.includes(exec.status as ExecutionStatus);
    if (!terminal)
      await Execution.updateOne(
        { _id: exec._id },
        {
          $set: {
            status: input.status,
            result: text,
            error:
              input.status === 'failed'
                ? {
                    message: input.error ?? FAILURES.internal.message,
                    code: input.errorCode ?? FAILURES.internal.code,
                  }
                : input.status === 'cancelled'
                  ? { message: 'Execution cancelled', code: 'cancelled' }
                  : null,
            usage,
            completedAt: now,
          },
        }
      );

    await appendEvents(exec._id, final);
    if (ownsChatRange) await mirrorToChat(exec, [...events, ...final], input.status, text);

    // Service events (webhooks), keyed so a retried finish records nothing new. A cancelled execution has none.
    if (input.status !== 'cancelled') {
      const finalStatus = terminal ? (exec.status as ExecutionStatus) : input.status;
      if (finalStatus === 'completed' || finalStatus === 'failed')
        await recordEvent({
          type: finalStatus === 'completed' ? 'execution.completed' : 'execution.failed',
          organizationId: exec.organizationId,
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
        });
    }
    await recordEvent({
      type: 'chat.status_changed',
      organizationId: exec.organizationId,
      data: {
        chatId: exec.chatId,
        status: chatAfter.status,
        executionId: exec._id,
        ...(chatAfter.review ? { review: chatAfter.review } : {}),
      },
      key: `${exec._id}:chat-status:final`,
    });

    log.info({ executionId: exec._id, status: input.status, usage }, 'execution finished');
  }

  return { generateReply, finishExecution };
}

export type ExecutionActivities = ReturnType<typeof createExecutionActivities>;
