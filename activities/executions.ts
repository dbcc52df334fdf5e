/**
 * Activities of the agentExecution workflow. All are idempotent under Temporal's at-least-once execution:
 * status moves are conditional, events have deterministic seqs, messages deterministic ids.
 */
import { traceModelCall, traceToolCall } from '../lib/tracing';
import { executionDuration, executionsFinished, firstDelta, repliesAbortedDirectly } from '../lib/metrics';
import { Context } from '@temporalio/activity';
import { ApplicationFailure, CancelledFailure } from '@temporalio/common';
import { AgentFileTools, type ToolOutcome } from '../commands/agentFileTools';
import { AgentMcpTools, type McpToolRef } from '../commands/agentMcpTools';
import { enabledTools } from '../commands/builtInTools';
import { SubAgentTools, withChildUsage } from '../commands/subAgents';
import { agentWithSkills } from '../commands/skills';
import { userTurn } from '../commands/mediaTurn';
import { composeSystemPrompt } from '../commands/systemPrompt';
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
  type ModelContentBlock,
  type ModelMessage,
} from '../lib/providers';
import { randomBytes } from 'node:crypto';
import { executionEnded } from '../lib/executionAdmission';
import { onAbortRequest, registerRunningCall } from '../lib/runningCalls';
import {
  CANCELLED_BY_REQUEST,
  deadlineMessage,
  FAILURES,
  rejectedMessage,
  type FailureCode,
} from '../workflows/failures';
import { JOB_PROTOCOL_PROMPT } from '../workflows/jobStates';
import { chatRangeEnd, chatStatusAfter, mirrorEvent, mirrorsToChat, mirrorToChat, toolEventKind } from './chatStream';
import { recordEvent, recordEvents, type EventDeps } from '../commands/serviceEvents';
import { cancelSubAgents, metaEvent } from '../commands/executions';
import {
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

export interface ExecutionActivityDeps extends EventDeps {
  logger: Logger;
  config: Readonly<Config>;
}

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
  /** The completing attempt's token counts (from generateReply), written with the outcome. */
  attemptUsage?: AttemptUsage & { attempt: number | string };
  /** Failure message (failed), in the service's words (workflows/failures.ts). */
  error?: string;
  /** Failure code (failed). */
  errorCode?: FailureCode;
}

/** What finishExecution recorded (histories recorded before it returned this hold nothing). */
export interface FinishOutcome {
  status: 'completed' | 'failed' | 'cancelled';
  /** The reply (completed). */
  text?: string;
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

/** A tool call as recorded in the execution's stream (`tool_use` event). */
interface ToolCall {
  id: string;
  name: string;
  input: Record<string, unknown>;
}

/**
 * The stream's `message` event of a call (`messageType: tool_use`) [docs/decisions.md "MCP server instances"]; an
 * MCP tool's also names its server and tool (`mcp`).
 */
export function toolUseEvent(call: ToolCall, mcp?: McpToolRef): Omit<LoggedEvent, 'seq'> {
  return {
    event: 'message',
    data: { messageType: 'tool_use', toolUseId: call.id, name: call.name, input: call.input, ...(mcp ? { mcp } : {}) },
  };
}

/** The stream's `message` event of a call's result (`messageType: tool_result`): what the model got. */
export function toolResultEvent(call: ToolCall, out: ToolOutcome, mcp?: McpToolRef): Omit<LoggedEvent, 'seq'> {
  return {
    event: 'message',
    data: {
      messageType: 'tool_result',
      toolUseId: call.id,
      name: call.name,
      content: out.content,
      isError: out.isError,
      ...(mcp ? { mcp } : {}),
    },
  };
}

/** An assistant turn that called tools, and the user turn with their results. */
function toolTurns(text: string, calls: ToolCall[], results: Map<string, ToolOutcome>): ModelMessage[] {
  const assistant: ModelContentBlock[] = [
    ...(text.trim() !== '' ? [{ type: 'text' as const, text: text.trimEnd() }] : []),
    ...calls.map((c) => ({ type: 'tool_use' as const, id: c.id, name: c.name, input: c.input })),
  ];
  const user: ModelContentBlock[] = calls.map((c) => {
    const r = results.get(c.id)!;
    return { type: 'tool_result' as const, toolUseId: c.id, content: r.content, isError: r.isError };
  });
  return [
    { role: 'assistant', content: assistant },
    { role: 'user', content: user },
  ];
}

/**
 * Rebuilds the tool rounds an earlier attempt recorded in the execution's stream [docs/decisions.md "Agent file
 * tools"]: each round is the text streamed, the calls (`tool_use`), then their results (`tool_result`).
 * @param events the execution's events so far.
 * @returns the finished rounds as model turns, an open round (calls recorded, some results not), the text of the
 * round still streaming (the prefill), and how many rounds there were.
 */
export function replayToolRounds(events: LoggedEvent[]): {
  turns: ModelMessage[];
  open: { text: string; calls: ToolCall[]; results: Map<string, ToolOutcome> } | null;
  tail: string;
  rounds: number;
} {
  const turns: ModelMessage[] = [];
  let text = '';
  let calls: ToolCall[] = [];
  let results = new Map<string, ToolOutcome>();
  let rounds = 0;
  const resolved = (): boolean => calls.length > 0 && calls.every((c) => results.has(c.id));
  const close = (): void => {
    turns.push(...toolTurns(text, calls, results));
    text = '';
    calls = [];
    results = new Map();
  };
  for (const e of events) {
    if (isTextDelta(e)) {
      if (resolved()) close();
      text += (e.data as { delta: { text: string } }).delta.text;
    } else if (toolEventKind(e) === 'tool_use') {
      if (resolved()) close();
      if (calls.length === 0) rounds += 1;
      const d = e.data as { toolUseId: string; name: string; input: Record<string, unknown> };
      calls.push({ id: d.toolUseId, name: d.name, input: d.input });
    } else if (toolEventKind(e) === 'tool_result') {
      const d = e.data as { toolUseId: string; content: string; isError: boolean };
      results.set(d.toolUseId, { content: d.content, isError: d.isError });
    }
  }
  if (calls.length === 0) return { turns, open: null, tail: text, rounds };
  if (resolved()) {
    close();
    return { turns, open: null, tail: '', rounds };
  }
  return { turns, open: { text, calls, results }, tail: '', rounds };
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
  const messages = new Map<string, string>();
  // Both messages of up to HISTORY_BATCH turns to a query, by `_id` (docs/query-shapes.md).
  for (let i = 0; i < ids.length; i += HISTORY_BATCH) {
    const keys = ids.slice(i, i + HISTORY_BATCH).flatMap((id) => [`${id}:user`, `${id}:assistant`]);
    const docs = await ChatMessage.find({ $or: keys.map((_id) => ({ _id })) })
      .select({ content: 1 })
      .lean();
    for (const d of docs) messages.set(d._id, d.content);
  }
  return ids.flatMap((id) => {
    const user = messages.get(`${id}:user`);
    const assistant = messages.get(`${id}:assistant`);
    return user !== undefined && assistant !== undefined
      ? [
          { role: 'user' as const, content: user },
          { role: 'assistant' as const, content: assistant },
        ]
      : [];
  });
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

/** Most execution records kept for their finish (activities/executions.ts `handedOver`). */
const MAX_HANDED_OVER = 1000;

/** Earlier turns whose messages one query of {@link sessionHistory} reads. */
const HISTORY_BATCH = 50;

/**
 * Reads the execution, moving it from pending to running on the way (one round trip on the first attempt).
 * @param executionId the execution.
 * @returns the execution, and whether this call moved it to running.
 */
async function loadAndClaim(executionId: string): Promise<{ exec: ExecutionDoc | null; claimed: boolean }> {
  const claimed = await Execution.findOneAndUpdate(
    { _id: executionId, status: 'pending' },
    { $set: { status: 'running', startedAt: new Date() } },
    { new: true }
  ).lean<ExecutionDoc>();
  if (claimed) return { exec: claimed, claimed: true };
  return { exec: await Execution.findById(executionId).lean<ExecutionDoc>(), claimed: false };
}

/** Limits of a reply run as a local activity (shape 3, workflows/agentExecution.ts). */
export interface ReplyLimits {
  /** When the execution's deadline passes (ms since the epoch): the reply stops itself then. */
  deadlineAt: number;
  /** The deadline in seconds (for the client's message). */
  deadlineSeconds: number;
}

/**
 * The key of one run of the reply in `usageByAttempt`: the activity attempt for a regular activity (shapes 2 and
 * older); for a local one, whose attempt count starts again when another worker takes its workflow task over, the
 * attempt and a random suffix, so that every run the provider billed keeps its own count.
 * @param info the activity's info.
 * @returns the key.
 */
function attemptKey(info: { attempt: number; isLocal: boolean }): number | string {
  return info.isLocal ? `${info.attempt}-${randomBytes(4).toString('hex')}` : info.attempt;
}

/**
 * The chat shows that an execution just moved to running is working. Activities address records by the ids
 * stored on their execution, which the api wrote for one organization.
 */
async function announceRunning(exec: ExecutionDoc, deps: EventDeps): Promise<void> {
  await Chat.updateOne({ _id: exec.chatId }, { $set: { status: chatStatusOf('running') } });
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
 * @param deps logger and configuration (provider keys).
 * @returns the execution activities.
 */
export function createExecutionActivities(deps: ExecutionActivityDeps) {
  const log = deps.logger.child({ component: 'executions' });
  /**
   * Execution records a completed local reply (shape 3) hands to the finish that follows it in the same workflow
   * task, in this process: the finish then writes without reading the record again. Only what the finish reads is
   * used (ids, turn, createdAt, the usage of earlier attempts, which the claim read after they were saved); a
   * running execution's status is `running`. Bounded: entries whose finish runs elsewhere are dropped oldest first.
   */
  const handedOver = new Map<string, ExecutionDoc>();
  const handOver = (exec: ExecutionDoc): void => {
    handedOver.delete(exec._id);
    handedOver.set(exec._id, exec);
    if (handedOver.size > MAX_HANDED_OVER) handedOver.delete(handedOver.keys().next().value!);
  };

  // A cancel taken by another process reaches a reply running here over the wake-up channel; it is acted on once the
  // record confirms it (lib/runningCalls.ts).
  onAbortRequest(
    async (executionId) =>
      !!(await Execution.findById(executionId).select({ cancelRequestedAt: 1 }).lean())?.cancelRequestedAt,
    (err) => log.warn({ err }, 'cannot confirm a cancel request')
  );

  /**
   * Streams the model reply into the event log. After a worker died mid-stream, the retry continues the reply
   * after the text already delivered (prefill), so clients never see text twice.
   */
  async function generateReply(
    executionId: string,
    limits?: ReplyLimits
  ): Promise<{ text: string; lastSeq: number; attemptUsage: AttemptUsage & { attempt: number | string } }> {
    const ctx = Context.current();
    // A local activity (shape 3) is aborted directly by the cancel endpoint (lib/runningCalls.ts), registered
    // before the execution is read: a cancel that comes earlier is seen in the record.
    const direct = new AbortController();
    const unregister = ctx.info.isLocal ? registerRunningCall(executionId, direct) : () => undefined;
    try {
      return await reply(ctx, executionId, direct.signal, limits);
    } finally {
      unregister();
    }
  }

  /** @returns the failure of a reply the cancel endpoint aborted. */
  const cancelledByRequest = (): ApplicationFailure => {
    repliesAbortedDirectly.inc();
    return ApplicationFailure.create({
      type: CANCELLED_BY_REQUEST,
      message: 'Execution cancelled',
      nonRetryable: true,
    });
  };

  /** generateReply's work, once registered for a direct cancel. */
  async function reply(
    ctx: Context,
    executionId: string,
    direct: AbortSignal,
    limits: ReplyLimits | undefined
  ): Promise<{ text: string; lastSeq: number; attemptUsage: AttemptUsage & { attempt: number | string } }> {
    // Only a pending execution is claimed: the api marks one whose workflow start failed (Temporal away) as
    // failed, and if that start reached the server after all, the workflow must not bring it back to life.
    const { exec, claimed } = await loadAndClaim(executionId);
    if (!exec) throw ApplicationFailure.nonRetryable(`Execution ${executionId} not found`, 'ExecutionMissing');
    if (exec.error?.code === 'start_failed')
      throw ApplicationFailure.nonRetryable('The execution could not be started', 'StartFailed');
    if (exec.cancelRequestedAt || direct.aborted) throw cancelledByRequest();
    const deadlineFailure = (): ApplicationFailure =>
      failure(FAILURES.deadlineExceeded, false, deadlineMessage(limits!.deadlineSeconds));
    if (limits && Date.now() >= limits.deadlineAt) throw deadlineFailure();
    // The reads are independent of each other: they go out together (time to first token).
    const [, found, history, existing] = await Promise.all([
      claimed ? announceRunning(exec, deps) : undefined,
      // The system prompt and the skills are read now, so an update applies to the next execution.
      agentWithSkills(exec.agentId),
      // The first turn of a session has no history.
      exec.turn > 1 ? sessionHistory(exec.sessionId, exec._id) : [],
      // The execution this call claimed has nothing in its stream yet but the api's `meta` event.
      claimed ? [metaEvent(exec)] : readEvents(executionId),
    ]);
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
        : undefined
    );
    const provider = createProvider({ provider: exec.provider as 'anthropic', model: exec.model }, deps.config);
    // The built-in tools it offers (commands/builtInTools.ts): an agent running in a workspace may list, read and
    // write its files (the built-in model calls no tools).
    const builtIn = enabledTools({ toolUse: provider.name !== 'builtin', workspace: !!exec.spaceId, agent, skills });
    const tools =
      builtIn.length > 0 && exec.spaceId
        ? new AgentFileTools(deps.config, { organizationId: exec.organizationId, spaceId: exec.spaceId })
        : null;
    // The tools of the agent's MCP servers join them (commands/agentMcpTools.ts), listed now.
    const mcp =
      provider.name !== 'builtin'
        ? await AgentMcpTools.load(deps.config, agent, skills)
        : AgentMcpTools.none(deps.config);
    // An agent with sub-agents may hand them tasks (commands/subAgents.ts).
    const sub = await SubAgentTools.load(deps.config, exec, agent, provider.name !== 'builtin', existing);
    const offered = [...builtIn, ...mcp.offered, ...sub.offered];
    const maxRounds = deps.config.agentTools.maxRounds;
    const replay = replayToolRounds(existing);
    let toolEvents = existing.some((e) => toolEventKind(e) === 'tool_use');
    const attempt = attemptKey(ctx.info);
    // A local activity has no heartbeat of its own: the SDK heartbeats its workflow task.
    const beat = ctx.info.isLocal ? undefined : setInterval(() => ctx.heartbeat(), HEARTBEAT_MS);
    const usage = trackUsage(executionId, attempt);
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

    /**
     * Runs the calls whose result is not recorded yet, recording each result before the next call runs. `interrupted`:
     * the calls were recorded by an attempt that died before their results (MCP calls are then not sent again).
     */
    const runCalls = async (
      calls: ToolCall[],
      results: Map<string, ToolOutcome>,
      round: number,
      interrupted = false
    ): Promise<void> => {
      for (const call of calls) {
        if (results.has(call.id)) continue;
        signal.throwIfAborted();
        const out: ToolOutcome = await traceToolCall(call.name, async () =>
          round > maxRounds
            ? { content: `Tool call limit reached (${maxRounds} rounds): answer without tools`, isError: true }
            : sub.handles(call.name)
              ? sub.run(ctx.client, call, (e) => writer.append([e]), signal, log)
              : mcp.handles(call.name)
                ? mcp.run(call.name, call.input, interrupted, signal)
                : tools
                  ? tools.run(call.name, call.input)
                  : { content: 'No tools are available in this execution', isError: true }
        );
        // A call cut short by a cancel records no result: the reply ends here.
        signal.throwIfAborted();
        await writer.append([toolResultEvent(call, out, mcp.describe(call.name))]);
        results.set(call.id, out);
        log.info({ executionId, tool: call.name, isError: out.isError }, 'tool call');
      }
    };

    try {
      const conversation: ModelMessage[] = [...messages, ...replay.turns];
      let rounds = replay.rounds;
      let prefill = replay.tail;
      // A retry that resumes a reply already delivered text: its first delta is not the execution's.
      let deltaSeen = earlier !== '';
      if (replay.open) {
        // A worker died between recording a round's calls and recording all their results: only the missing
        // ones run (a repeated write writes the same content again).
        await runCalls(replay.open.calls, replay.open.results, rounds, true);
        conversation.push(...toolTurns(replay.open.text, replay.open.calls, replay.open.results));
      }
      for (;;) {
        signal.throwIfAborted();
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
            ...(offered.length > 0 ? { tools: offered } : {}),
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
        await writer.flush();
        usage.nextCall();
        if (calls.length === 0) break;
        rounds += 1;
        // The calls are recorded (one insert) before any runs, and each result before the next model call: a
        // retry after a crash replays them from the stream instead of running them again.
        await writer.append(calls.map((c) => toolUseEvent(c, mcp.describe(c.name))));
        toolEvents = true;
        const results = new Map<string, ToolOutcome>();
        await runCalls(calls, results, rounds);
        conversation.push(...toolTurns(prefill + writer.written.slice(writtenBefore), calls, results));
        prefill = '';
        if (rounds > maxRounds + 1) break;
      }
      const nextSeq = await writer.flush();
      await mirrored;
      if (ctx.info.isLocal) handOver(exec);
      return {
        text: earlier + writer.written,
        lastSeq: nextSeq - 1,
        attemptUsage: { attempt, ...(await usage.handOver()) },
      };
    } catch (err) {
      await writer.flush().catch(() => undefined);
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
  function trackUsage(executionId: string, attempt: number | string) {
    let current: AttemptUsage = { inputTokens: 0, outputTokens: 0, final: false };
    // Counts of the attempt's earlier model calls (a tool loop makes several).
    const before = { inputTokens: 0, outputTokens: 0 };
    let deltas = 0;
    let dirty = false;
    let chain: Promise<void> = Promise.resolve();
    let closed = false;
    const counts = (): AttemptUsage => ({
      inputTokens: before.inputTokens + current.inputTokens,
      outputTokens: before.outputTokens + current.outputTokens,
      final: current.final,
    });
    const save = (): Promise<void> => {
      if (!dirty) return chain;
      dirty = false;
      const snapshot = counts();
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
      /** The model call ended: the next call's counts add to it. */
      nextCall(): void {
        before.inputTokens += current.inputTokens;
        before.outputTokens += current.outputTokens;
        current = { inputTokens: 0, outputTokens: 0, final: false };
        deltas = 0;
        dirty = true;
      },
      /** Saves the counts (an attempt that failed or was cut short); after {@link handOver} it does nothing. */
      async close(): Promise<void> {
        clearInterval(timer);
        if (closed) return;
        closed = true;
        dirty = true;
        await save();
      },
      /**
       * The reply is complete: the counts go to finishExecution with the reply, which writes them with the outcome
       * (one round trip fewer); saves still in flight land first.
       * @returns the attempt's counts.
       */
      async handOver(): Promise<AttemptUsage> {
        clearInterval(timer);
        closed = true;
        await chain;
        return counts();
      },
    };
  }

  /**
   * Records the outcome once: final status, result (partial text on failure/cancel), usage, the final stream
   * events, the chat messages, and releases the session.
   */
  async function finishExecution(input: FinishInput): Promise<FinishOutcome> {
    // A completed local reply of this process handed its record over (read when it claimed the execution); a
    // retried finish, or one in another process, reads it.
    const handed = handedOver.get(input.executionId);
    handedOver.delete(input.executionId);
    const exec = handed ?? (await Execution.findById(input.executionId).lean<ExecutionDoc>());
    if (!exec) throw ApplicationFailure.nonRetryable(`Execution ${input.executionId} not found`, 'ExecutionMissing');
    // A completed reply says where its stream ends; only this finish writes after that (the same events at the
    // same seqs when it is retried), so the stream is not read back.
    const known = input.status === 'completed' && input.lastSeq !== undefined && input.text !== undefined;
    const events = known ? [] : await readEvents(exec._id);
    const text = input.status === 'completed' ? (input.text ?? deliveredText(events)) : deliveredText(events);
    const { attempt: usageAttempt, ...attemptCounts } = input.attemptUsage ?? { attempt: undefined };
    const byAttempt = {
      ...(exec.usageByAttempt as Record<string, { inputTokens?: number; outputTokens?: number }>),
      ...(usageAttempt !== undefined ? { [usageAttempt]: attemptCounts } : {}),
    };
    const usage = withChildUsage(totalUsage(byAttempt), exec.childUsage);
    const now = new Date();

    // Final events, each written once (a retried finish sees what an earlier attempt already wrote).
    let seq = (known ? input.lastSeq! : (events.at(-1)?.seq ?? 0)) + 1;
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
    // The chat's status changes while the execution still holds the session, so the next execution's `working`
    // always comes after it (a retried finish that already freed the session leaves the chat alone). A completed
    // reply joins the history in the same round trip that reads who holds the session, while its message is
    // written (nothing reads the history before the session is free).
    const [, session] = await allDone([
      input.status === 'completed'
        ? ChatMessage.updateOne(
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
          )
        : undefined,
      input.status === 'completed'
        ? // (no projection: the embedded database's findAndModify does not take one)
          Session.findOneAndUpdate({ _id: exec.sessionId }, { $addToSet: { history: exec._id } }).lean()
        : Session.findById(exec.sessionId).select({ activeExecutionId: 1 }).lean(),
    ] as const);
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
            ...(usageAttempt !== undefined ? { [`usageByAttempt.${usageAttempt}`]: attemptCounts } : {}),
            completedAt: now,
          },
        }
      );

    // The final stream events and the service events (webhooks, keyed so a retried finish records nothing new; a
    // cancelled execution has none) both follow the terminal status, and are written together.
    const finalStatus = terminal ? (exec.status as ExecutionStatus) : input.status;
    const streamed = async (): Promise<void> => {
      await appendEvents(exec._id, final);
      if (ownsChatRange) await mirrorToChat(exec, [...events, ...final], input.status, text);
    };
    await allDone([
      streamed(),
      recordEvents(
        exec.organizationId,
        [
          ...(input.status !== 'cancelled' && (finalStatus === 'completed' || finalStatus === 'failed')
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

    // Sub-agents still running stop with their parent (commands/subAgents.ts).
    if (input.status !== 'completed')
      await Promise.resolve()
        .then(() => cancelSubAgents(Context.current().client, exec))
        .catch((err: unknown) => log.warn({ err, executionId: exec._id }, 'could not cancel sub-agents'));
    if (!terminal) {
      executionsFinished.inc({ status: finalStatus });
      executionDuration.observe({ status: finalStatus }, (Date.now() - new Date(exec.createdAt).getTime()) / 1000);
    }
    log.info({ executionId: exec._id, status: input.status, usage }, 'execution finished');
    // Its admission slot, when this process admitted it (lib/executionAdmission.ts), is free for the next one.
    executionEnded(exec._id);
    // The outcome as recorded: a finish that came after the execution was already terminal (the workflow task was
    // run again because a cancel arrived as it completed) answers what the first one recorded.
    return finalStatus === 'completed'
      ? { status: finalStatus, text: terminal ? (exec.result ?? '') : text }
      : { status: finalStatus as 'failed' | 'cancelled' };
  }

  return { generateReply, finishExecution };
}

export type ExecutionActivities = ReturnType<typeof createExecutionActivities>;
