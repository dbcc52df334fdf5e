/**
 * The model loop of an execution, generateReply: claims the execution (commands/executionClaim.ts), reads what its reply needs (agent, skills,
 * session history, the stream so far), then calls the model turn by turn, streaming its text into the event log and
 * running the tools it calls (activities/executionTools.ts) until it answers without tools. A retry continues after
 * what an earlier attempt delivered; a cancel, the idle timeout or the deadline stops it, each failure in the
 * service's words (workflows/failures.ts).
 */
import { Context } from '@temporalio/activity';
import { ApplicationFailure, CancelledFailure } from '@temporalio/common';
import type { ToolOutcome } from '../commands/agentFileTools';
import { turnMessagesOf } from '../commands/chatMessageReads';
import { claimExecution } from '../commands/executionClaim';
import { metaEvent } from '../commands/executionMeta';
import { userTurn } from '../commands/mediaTurn';
import { recordEvent, type EventDeps } from '../commands/serviceEvents';
import { agentWithSkills } from '../commands/skills';
import { composeSystemPrompt } from '../commands/systemPrompt';
import type { Config } from '../lib/config';
import { CoalescingWriter, followedHere, readWritten } from '../commands/eventLog';
import { findByIdDirect, updateOneDirect } from '../lib/driverOps';
import type { Logger } from '../lib/logger';
import { firstDelta, repliesAbortedDirectly } from '../lib/metrics';
import {
  createProvider,
  ProviderAbortedError,
  ProviderError,
  ProviderIdleError,
  ProviderNotConfiguredError,
  withIdleTimeout,
  type ModelMessage,
} from '../lib/providers';
import { registerRunningCall } from '../lib/runningCalls';
import { markActiveSpan, traceModelCall } from '../lib/tracing';
import {
  CANCELLED_BY_REQUEST,
  deadlineMessage,
  FAILURES,
  rejectedMessage,
  type FailureCode,
} from '../workflows/failures';
import { JOB_PROTOCOL_PROMPT } from '../workflows/jobStates';
import { mirrorEvent, mirrorsToChat, mirrorToChat, toolEventKind } from './chatStream';
import {
  deliveredText,
  isFinishEvent,
  replayToolRounds,
  textDeltaEvent,
  toolTurns,
  toolUseEvent,
  type ToolCall,
} from './executionEvents';
import type { HandedOver } from './executionFinish';
import { replySpend } from './executionSpend';
import { ExecutionTools, type ReplyContext, type ToolRun } from './executionTools';
import { attemptKey, trackUsage, type AttemptUsage } from './executionUsage';
import {
  Chat,
  chatStatusOf,
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

/** Earlier turns whose messages one query of {@link sessionHistory} reads. */
const HISTORY_BATCH = 50;

/**
 * The completed earlier turns of a session, read by id (the session lists its completed executions in order, on its
 * chat or, recorded before, in its `sessions` document: commands/conversations.ts).
 * @param exec the execution being generated (excluded).
 * @returns user and assistant messages in order.
 */
async function sessionHistory(
  exec: Pick<ExecutionDoc, '_id' | 'chatId' | 'sessionId' | 'sessionOnChat'>
): Promise<ModelMessage[]> {
  const session = exec.sessionOnChat
    ? await findByIdDirect<{ history?: string[] }>(Chat, exec.chatId, { history: 1 })
    : await findByIdDirect<{ history?: string[] }>(Session, exec.sessionId, { history: 1 });
  const ids = (session?.history ?? []).filter((id) => id !== exec._id);
  const assistants = new Map<string, string>();
  const users = new Map<string, string>();
  // Up to HISTORY_BATCH turns to a query each, by `_id` (docs/query-shapes.md): both messages of a turn are on its
  // execution's record (commands/chatMessageReads.ts).
  for (let i = 0; i < ids.length; i += HISTORY_BATCH) {
    const batch = await turnMessagesOf(ids.slice(i, i + HISTORY_BATCH));
    for (const [id, text] of batch.users) users.set(id, text);
    for (const [id, text] of batch.replies) assistants.set(id, text);
  }
  return ids.flatMap((id) => {
    const user = users.get(id);
    const assistant = assistants.get(id);
    return user !== undefined && assistant !== undefined
      ? [
          { role: 'user' as const, content: user },
          { role: 'assistant' as const, content: assistant },
        ]
      : [];
  });
}

/** Limits of a reply run as a local activity (shape 3, workflows/agentExecution.ts). */
export interface ReplyLimits {
  /** When the execution's deadline passes (ms since the epoch): the reply stops itself then. */
  deadlineAt: number;
  /** The deadline in seconds (for the client's message). */
  deadlineSeconds: number;
}

/** What a completed reply hands the workflow, for its finish (activities/executionFinish.ts). */
export interface ReplyOutcome {
  /** The whole reply. */
  text: string;
  /** Seq of the last event the reply wrote. */
  lastSeq: number;
  /**
   * The end of the reply, not written: the text still buffered when the model's last stream ended, which the finish
   * writes as one delta with its final events (absent: none).
   */
  held?: string;
  /** The completing attempt's token counts. */
  attemptUsage: AttemptUsage & { attempt: number | string };
}

/**
 * The chat shows that an execution just moved to running is working. Activities address records by the ids
 * stored on their execution, which the api wrote for one organization.
 */
async function announceRunning(exec: ExecutionDoc, deps: EventDeps): Promise<void> {
  // A chat the api created with this execution already shows `working` (commands/executionStart.ts).
  if (!exec.chatShowsWorking)
    await updateOneDirect(Chat, { _id: exec.chatId }, { $set: { status: chatStatusOf('running') } });
  await recordEvent(
    {
      type: 'chat.status_changed',
      organizationId: exec.organizationId,
      data: { chatId: exec.chatId, status: chatStatusOf('running'), executionId: exec._id },
      key: `${exec._id}:chat-status:running`,
    },
    deps
  );
}

/**
 * @param deps configuration (provider keys, limits).
 * @param log the execution activities' logger.
 * @param handedOver where a completed local reply leaves its record for the finish (activities/executionFinish.ts).
 * @returns generateReply.
 */
export function createGenerateReply(
  deps: EventDeps & { config: Readonly<Config> },
  log: Logger,
  handedOver: HandedOver
) {
  /** @returns the failure of a reply the cancel endpoint aborted. */
  const cancelledByRequest = (): ApplicationFailure => {
    repliesAbortedDirectly.inc();
    return ApplicationFailure.create({
      type: CANCELLED_BY_REQUEST,
      message: 'Execution cancelled',
      nonRetryable: true,
    });
  };

  /**
   * generateReply's work, once registered for a direct cancel.
   * @param pending writes started beside the model call: generateReply waits for them however the reply ends, so
   *   nothing of this attempt lands after the finish.
   */
  async function reply(
    ctx: ReplyContext,
    executionId: string,
    direct: AbortSignal,
    limits: ReplyLimits | undefined,
    pending: Promise<unknown>[]
  ): Promise<ReplyOutcome> {
    // Only a pending execution is claimed (or one its eager start recorded running: commands/executionClaim.ts, from
    // this process's memory on the first attempt of an eager start, no round trip): the api marks one whose workflow
    // start failed (Temporal away) as failed, and if that start reached the server after all, the workflow must not
    // bring it back to life.
    const { exec, claimed, fresh } = await claimExecution(executionId, ctx.info.attempt);
    if (!exec) throw ApplicationFailure.nonRetryable(`Execution ${executionId} not found`, 'ExecutionMissing');
    if (exec.error?.code === 'start_failed')
      throw ApplicationFailure.nonRetryable('The execution could not be started', 'StartFailed');
    // An execution whose outcome is recorded is not run again (the workflow task run again after its worker died
    // between the finish's outcome and the task's end): its finish answers what was recorded.
    if (TERMINAL_EXECUTION_STATUSES.includes(exec.status as ExecutionStatus))
      throw ApplicationFailure.nonRetryable('The execution already ended', 'ExecutionEnded');
    if (exec.cancelRequestedAt || direct.aborted) throw cancelledByRequest();
    const deadlineFailure = (): ApplicationFailure =>
      failure(FAILURES.deadlineExceeded, false, deadlineMessage(limits!.deadlineSeconds));
    if (limits && Date.now() >= limits.deadlineAt) throw deadlineFailure();
    // The chat's `working` status and its service event are not needed before the model call: written while it starts
    // (time to first token), and awaited before the reply returns, so the finish's events still come after them.
    const running = claimed ? announceRunning(exec, deps) : Promise.resolve();
    running.catch(() => undefined); // a failure is seen where it is awaited: before the reply returns
    pending.push(running); // and by generateReply however the reply ends
    // The reads are independent of each other: they go out together (time to first token).
    const [found, history, existing] = await Promise.all([
      // The system prompt and the skills are read now, so an update applies to the next execution.
      agentWithSkills(exec.agentId),
      // The first turn of a session has no history.
      exec.turn > 1 ? sessionHistory(exec) : [],
      // The execution this attempt is the first to run (`fresh`) has nothing in its stream yet but the api's `meta`
      // event, and a rerun's the steps it reuses after it (commands/chatForks.ts).
      // An execution that was queued for a concurrency key has its `queued` event too. An attempt that follows
      // another reads past the stream's head: what a dead attempt inserted before raising the head is kept and
      // continued, never written again with other text (commands/eventLog.ts readWritten).
      fresh && !exec.rerunOf && !exec.concurrency?.length ? [metaEvent(exec)] : readWritten(executionId),
    ]);
    // A finish of this execution already wrote its final events past what the reply writes (its workflow task died
    // after them, and runs the reply again): the reply is what the stream holds, and nothing more is streamed after
    // the terminal event. The finish reads the record and the stream itself (no hand-over: the session may be free).
    const finishedAt = existing.findIndex(isFinishEvent);
    if (finishedAt >= 0) {
      const stored = existing.slice(0, finishedAt);
      const terminal = existing.find((e) => e.event === 'error');
      if (terminal)
        throw ApplicationFailure.create({
          type: FAILURES.internal.code,
          message: String((terminal.data as { message?: string }).message ?? FAILURES.internal.message),
          nonRetryable: true,
        });
      return {
        text: deliveredText(stored),
        lastSeq: existing[finishedAt].seq - 1,
        attemptUsage: { attempt: attemptKey(ctx.info), inputTokens: 0, outputTokens: 0, final: true },
      };
    }
    if (!found) throw failure(FAILURES.agentNotFound, false);
    const { agent, skills } = found;
    // The agent's prompt, then its skills' (commands/systemPrompt.ts).
    const system = composeSystemPrompt(agent, skills);
    // The message, with the media it references read now (commands/mediaTurn.ts).
    const messages: ModelMessage[] = [...history, await userTurn(exec, deps.config)];
    const earlier = deliveredText(existing);
    // The chat stream gets the user message, the working status and whatever an earlier attempt delivered, then
    // each delta right after it is written to the execution's own stream. The first part is written while the
    // model call starts; each delta's chat copy waits for it, so the chat stream keeps its order.
    const mirror = mirrorsToChat(exec);
    const mirrored = mirror ? mirrorToChat(exec, existing) : Promise.resolve();
    mirrored.catch(() => undefined); // awaited by each delta's copy and before the reply returns
    const writer = new CoalescingWriter(
      executionId,
      (existing.at(-1)?.seq ?? 0) + 1,
      textDeltaEvent,
      undefined,
      undefined,
      mirror
        ? async (e) => {
            await mirrored;
            await mirrorEvent(exec, e);
          }
        : undefined,
      // The attempt's token counts ride the head raises (the input count the first delta's): no write of their own.
      // (`usage` is set below, before anything is written through this writer.)
      () => usage.headFields()
    );
    const provider = createProvider({ provider: exec.provider as 'anthropic', model: exec.model }, deps.config);
    // Its built-in tools, its MCP servers' and its sub-agents (activities/executionTools.ts).
    const tools = await ExecutionTools.load(deps.config, exec, agent, skills, provider.name !== 'builtin', existing);
    const replay = replayToolRounds(existing);
    let toolEvents = existing.some((e) => toolEventKind(e) === 'tool_use');
    const attempt = attemptKey(ctx.info);
    // A local activity has no heartbeat of its own: the SDK heartbeats its workflow task.
    const beat = ctx.info.isLocal ? undefined : setInterval(() => ctx.heartbeat(), HEARTBEAT_MS);
    const usage = trackUsage(executionId, attempt, log, deps.config.usageSaveMs);
    // The request is aborted by a cancellation (Temporal's, or the cancel endpoint's directly), by the idle timeout
    // or by the deadline: one controller every cause aborts (plain listeners, removed at the end).
    const stop = new AbortController();
    const idle = new AbortController();
    let deadlineHit = false;
    const abort = (): void => stop.abort(new Error('Reply stopped'));
    const sources = [ctx.cancellationSignal, idle.signal, direct];
    for (const s of sources) s.addEventListener('abort', abort, { once: true });
    if (sources.some((s) => s.aborted)) abort();
    const deadline = limits
      ? setTimeout(
          () => {
            deadlineHit = true;
            abort();
          },
          Math.max(0, limits.deadlineAt - Date.now())
        )
      : undefined;
    const signal = stop.signal;
    if (ctx.info.attempt > 1 || existing.length > 1)
      log.info({ executionId, attempt, resumedChars: earlier.length, rounds: replay.rounds }, 'resuming reply');

    // What running a round's calls needs of this reply (activities/executionTools.ts).
    const run: ToolRun = { ctx, executionId, signal, writer, log };
    // Budgets and the ledger (activities/executionSpend.ts).
    const spend = replySpend(deps, exec, log);

    let held = '';
    try {
      const conversation: ModelMessage[] = [...messages, ...replay.turns];
      let rounds = replay.rounds;
      let prefill = replay.tail;
      // A retry that resumes a reply already delivered text: its first delta is not the execution's.
      let deltaSeen = earlier !== '';
      if (replay.open) {
        // A worker died between recording a round's calls and recording all their results: only the missing
        // ones run (a repeated write writes the same content again), as interrupted (never sent twice). A rerun
        // from a tool call starts with that call recorded and not run (commands/chatForks.ts): its first attempt
        // runs it; a later attempt may follow a crash during it, so it too treats it as interrupted.
        const rerunsCall = fresh && !!exec.rerunOf;
        await tools.runCalls(run, replay.open.calls, replay.open.results, rounds, !rerunsCall);
        conversation.push(...toolTurns(replay.open.text, replay.open.calls, replay.open.results));
      }
      for (;;) {
        signal.throwIfAborted();
        await spend.check();
        const writtenBefore = writer.written.length;
        const calls: ToolCall[] = [];
        // One span per model call (lib/tracing.ts; a no-op while tracing is off).
        await traceModelCall({ provider: exec.provider, model: exec.model }, async (report) => {
          const events = provider.stream({
            model: exec.model,
            // A job's iteration is also told how to ask for review or input (workflows/jobStates.ts).
            system: exec.jobId ? `${system}\n\n${JOB_PROTOCOL_PROMPT}` : system,
            messages: conversation,
            prefill: prefill || undefined,
            maxTokens: MAX_OUTPUT_TOKENS,
            ...(tools.offered.length > 0 ? { tools: tools.offered } : {}),
            signal,
            note: exec.modelNote ?? undefined,
          });
          for await (const ev of withIdleTimeout(events, deps.config.modelIdleTimeoutSeconds * 1000, () =>
            idle.abort()
          )) {
            if (ev.type === 'text') {
              if (ev.text) {
                if (!deltaSeen) {
                  deltaSeen = true;
                  firstDelta.observe((Date.now() - new Date(exec.createdAt).getTime()) / 1000);
                  markActiveSpan('gen_ai.first_delta');
                }
                writer.text(ev.text);
                usage.delta();
              }
            } else if (ev.type === 'tool_use') calls.push({ id: ev.id, name: ev.name, input: ev.input });
            else {
              usage.report(ev.inputTokens, ev.outputTokens);
              report(ev);
            }
          }
        });
        // The last model call's buffered text is held back for the finish, which writes it with its final events
        // (an insert and a head raise fewer); a round that called tools writes it before the calls. A reply that
        // arrived whole, and that a client of this process follows live, is written at once as its first delta
        // (time to first token: the finish's writes come a few round trips later).
        if (calls.length === 0 && (writer.wrote || !followedHere(executionId))) held = await writer.hold();
        else await writer.flush();
        // The call's counts as the usage tracker holds them (the provider's output count, else its deltas).
        const call = usage.call();
        usage.nextCall();
        await spend.record(rounds + 1, call);
        if (calls.length === 0) break;
        rounds += 1;
        // The calls are recorded (one insert) before any runs, and each result before the next model call: a
        // retry after a crash replays them from the stream instead of running them again.
        await writer.append(calls.map((c) => toolUseEvent(c, tools.describe(c.name))));
        toolEvents = true;
        const results = new Map<string, ToolOutcome>();
        await tools.runCalls(run, calls, results, rounds);
        conversation.push(...toolTurns(prefill + writer.written.slice(writtenBefore), calls, results));
        prefill = '';
        if (rounds > tools.maxRounds + 1) break;
      }
      const nextSeq = await writer.flush();
      await Promise.all([mirrored, running]);
      if (ctx.info.isLocal) handedOver.put(exec);
      return {
        text: earlier + writer.written + held,
        lastSeq: nextSeq - 1,
        ...(held ? { held } : {}),
        attemptUsage: { attempt, ...(await usage.handOver()) },
      };
    } catch (err) {
      // Text held back for a finish that will not get it is written now, as it would have been.
      if (held)
        try {
          writer.text(held);
        } catch {
          // the writer already failed: nothing more of this attempt is written
        }
      await writer.flush().catch(() => undefined);
      if (err instanceof ApplicationFailure && err.type === FAILURES.budgetReached.code) throw err;
      const delivered = earlier + writer.written !== '' || toolEvents;
      if (err instanceof ProviderIdleError) {
        log.warn({ executionId, attempt, idleMs: err.idleMs, delivered }, 'model provider went silent');
        throw providerFailure(err, delivered);
      }
      if (deadlineHit) {
        log.warn({ executionId, attempt, deadlineSeconds: limits!.deadlineSeconds }, 'execution deadline exceeded');
        throw deadlineFailure();
      }
      if (direct.aborted) throw cancelledByRequest();
      const details = ctx.cancellationDetails;
      if (ctx.cancellationSignal.aborted || err instanceof ProviderAbortedError || signal.aborted) {
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
      clearTimeout(deadline);
      for (const s of sources) s.removeEventListener('abort', abort);
      await usage.close();
    }
  }

  /**
   * Streams the model reply into the event log. After a worker died mid-stream, the retry continues the reply
   * after the text already delivered (prefill), so clients never see text twice.
   */
  return async function generateReply(
    executionId: string,
    limits?: ReplyLimits,
    ctx: ReplyContext = Context.current()
  ): Promise<ReplyOutcome> {
    // A local activity (shape 3) is aborted directly by the cancel endpoint (lib/runningCalls.ts), registered
    // before the execution is read: a cancel that comes earlier is seen in the record.
    const direct = new AbortController();
    const unregister = ctx.info.isLocal ? registerRunningCall(executionId, direct) : () => undefined;
    const pending: Promise<unknown>[] = [];
    try {
      return await reply(ctx, executionId, direct.signal, limits, pending);
    } finally {
      await Promise.allSettled(pending);
      unregister();
    }
  };
}
