/**
 * Starting an agent execution from the api side (or a sub-agent's, from its parent's tool call): admission, the
 * conversation and its turn (commands/conversations.ts), the pending execution with its user message (its record holds
 * its stream's `meta` event: commands/executionMeta.ts; `running` when this process starts it eagerly:
 * commands/executionClaim.ts), then workflow `execution-<id>` with the options of workflows/executionStart.ts (their
 * one home).
 */
import type { Client } from '@temporalio/client';
import type { Config } from '../lib/config';
import { withDeadline } from '../lib/deadline';
import { AppError, NotFoundError, ServiceUnavailableError, ValidationError } from '../lib/errors';
import { ExecutionAdmission } from '../lib/executionAdmission';
import { newExecutionId } from '../lib/ids';
import { abortRunningCall } from '../lib/runningCalls';
import { executionsStarted, executionsStartedEagerly } from '../lib/metrics';
import { insertDocument, isDuplicateKey } from '../lib/mongo';
import { resolveModel } from '../lib/providers';
import { currentRequestId } from '../lib/requestContext';
import { callTimeLeft } from '../lib/requestDeadline';
import type { TemporalDeps } from '../lib/temporal';
import { Execution, TERMINAL_EXECUTION_STATUSES, type ExecutionDoc, type ExecutionStatus } from '../models';
import type { AgentExecutionWorkflow } from '../workflows/definitions';
import { executionStartOptions, workPriority } from '../workflows/executionStart';
import { findVisibleAgent } from './agents';
import { releaseTurn, resolveConversation, takeTurn, type ConversationSession } from './conversations';
import { beginEarly, dropHandOver, eagerClaimFields, handOver } from './executionClaim';
import { defaultSpaceId } from './defaultSpace';
import { appendEvents, insertEvents, type LoggedEvent } from './eventLog';
import { META_ON_RECORD } from './executionMeta';
import { checkMediaForModel, checkMediaIds } from './media';
import { fairnessWeight } from './fairShare';
import { refuseWhenSpent } from './spend';
import type { EventDeps } from './serviceEvents';
import type { AuthContext } from './tokens';

/** Time kept back from a request's deadline, when the start of its execution fails, to mark the execution failed. */
const START_FAILURE_RESERVE_MS = 500;

export interface ExecuteInput {
  message: string;
  spaceId?: string;
  sessionId?: string;
  chatId?: string;
  source: 'v1' | 'client' | 'chat' | 'mcp';
  parentExecutionId?: string;
  taskId?: string;
  /** The execution's id, when the caller must know it before the start (a task's run: commands/taskRuns.ts). */
  executionId?: string;
  /** Media of the organization the model gets with the message (checked here: commands/media.ts). */
  mediaIds?: string[];
  /** Caps of this run alone (docs/spend.md): it stops before its next model call once its spend reaches one. */
  maxTokens?: number;
  maxCostUsd?: number;
  /** A caller's concurrency key and its limit (default 1): docs/fairness.md "Concurrency keys". */
  concurrencyKey?: string;
  concurrencyLimit?: number;
  /** A rerun's origin and the events its stream starts with (commands/chatForks.ts `rerunExecution`). */
  rerun?: RerunSeed;
}

/** A rerun's origin, and the steps it reuses: events copied after its `meta` event, replayed by its reply. */
export interface RerunSeed {
  executionId: string;
  fromStep: number;
  events: Omit<LoggedEvent, 'seq'>[];
}

/** Configuration, Temporal, the admission of executions, and the dispatcher of service events. */
export interface ExecutionDeps extends EventDeps {
  config: Readonly<Config>;
  temporal: TemporalDeps;
  /**
   * The process's admission of executions (lib/executionAdmission.ts): {@link startExecution} takes a slot before any
   * work. Absent where nothing admits (a worker's own starts: job iterations and sub-agents are not admitted).
   */
  admission?: ExecutionAdmission;
}

/** The fields of a pending execution (its session already taken for it). */
export interface PendingExecution {
  _id: string;
  organizationId: string;
  agentId: string;
  userId: string;
  chatId: string;
  sessionId: string;
  spaceId: string;
  turn: number;
  message: string;
  provider: string;
  model: string;
  modelNote: string | null;
  parentExecutionId: string | null;
  rootExecutionId: string;
  taskId: string | null;
  source: ExecuteInput['source'] | 'job' | 'subagent';
  /** A sub-agent's: the parent's tool call that started it. */
  parentToolCallId?: string | null;
  /** A sub-agent's nesting depth (commands/subAgents.ts). */
  depth?: number;
  /** The request (or work) that started it; default: the current one (lib/requestContext.ts). */
  requestId?: string | null;
  jobId?: string | null;
  /** A mission run's job iteration: the mission (its budgets apply). */
  missionId?: string;
  /** The run's own caps (the execute body's `maxTokens` / `maxCostUsd`, docs/spend.md). */
  runCap?: { maxTokens?: number; maxCostUsd?: number };
  chatSeqBase: number;
  mediaIds?: string[];
  /** The api created the chat with this execution, already showing `working`: the reply does not write it. */
  chatShowsWorking?: boolean;
  /** Its session's state is on its chat (commands/conversations.ts), not in a `sessions` document. */
  sessionOnChat?: boolean;
  /** A rerun's: what it reruns, and the events its stream starts with after `meta`. */
  rerun?: RerunSeed;
  /** The concurrency keys it holds before it runs, in claim order (activities/executionConcurrency.ts). */
  concurrency?: { key: string; limit: number }[];
  /** An eager start's: recorded `running`, claimed by its start (commands/executionClaim.ts `eagerClaimFields`). */
  status?: 'running';
  startedAt?: Date;
  eagerClaim?: true;
}

const ignoreDuplicate = (err: unknown): void => {
  if (!isDuplicateKey(err)) throw err;
};

/**
 * Writes a pending execution (with its user message; its record holds its stream's `meta` event:
 * commands/executionMeta.ts), and a rerun's copied steps before it (each by a deterministic id: a repeat, such as a
 * retried job activity, writes nothing twice). Its workflow is started by the caller.
 * @param p the execution's fields.
 * @returns the execution as stored.
 */
export async function recordPendingExecution(p: PendingExecution): Promise<ExecutionDoc> {
  const { message, mediaIds, rerun, ...rest } = p;
  // Optional fields without a value are left out, not stored as null (models/Execution.ts): readers read a missing one
  // as null.
  const fields = Object.fromEntries(
    Object.entries({ ...rest, requestId: p.requestId ?? currentRequestId() }).filter(([, v]) => v != null)
  );
  // A rerun's stream starts with its copied steps after `meta` (seq 2 on): written first, then the record, which
  // raises the head over them as it is inserted (events before their head, as every writer does:
  // commands/eventLog.ts). Two writes; no reader finds the stream before its record.
  const seeded = (rerun?.events ?? []).map((e, i) => ({ ...e, seq: i + 2 }));
  if (seeded.length > 0) await insertEvents(p._id, seeded);
  // The user message is the record's `input.message` (commands/chatMessageReads.ts): no `chat_messages` document of
  // its own; its `meta` event is the record's too: nothing else is written.
  const stored = await (
    insertDocument(Execution, {
      ...fields,
      // An eager start's record is created running: created when it started, never after.
      ...(p.startedAt ? { createdAt: p.startedAt } : {}),
      ...META_ON_RECORD,
      input: { message, ...(mediaIds?.length ? { mediaIds } : {}) },
      ...(rerun ? { rerunOf: { executionId: rerun.executionId, fromStep: rerun.fromStep } } : {}),
      ...(seeded.length > 0 ? { streamSeq: seeded.length + 1 } : {}),
    }) as Promise<ExecutionDoc>
  ).catch(async (err: unknown) => {
    ignoreDuplicate(err);
    return Execution.findById(p._id).lean<ExecutionDoc>();
  });
  if (!stored) throw new NotFoundError('Execution not found');
  return stored;
}

/**
 * Records a pending execution ({@link recordPendingExecution}) and, in a new conversation, its chat beside it: two
 * inserts side by side, one round trip of latency before the start instead of two (time to first token). A chat that
 * could not be inserted takes the record back (as if neither was written: before, the record was not written when the
 * chat failed); a record that could not be, the caller's release answers for the chat.
 * @param insertChat the new conversation's chat insert (commands/conversations.ts `resolveConversation`), if any.
 * @param p the execution's fields.
 * @returns the execution as stored.
 */
export async function recordBesideChat(
  insertChat: (() => Promise<void>) | undefined,
  p: PendingExecution
): Promise<ExecutionDoc> {
  if (!insertChat) return recordPendingExecution(p);
  const [chatWrite, recordWrite] = await Promise.allSettled([insertChat(), recordPendingExecution(p)]);
  if (chatWrite.status === 'rejected') {
    // Best effort: a record left by a failed take-back is one no workflow runs, as after a crash before the start.
    if (recordWrite.status === 'fulfilled')
      await Execution.deleteOne({ _id: p._id, organizationId: p.organizationId }).catch(() => undefined);
    throw chatWrite.reason;
  }
  if (recordWrite.status === 'rejected') throw recordWrite.reason;
  return recordWrite.value;
}

/**
 * Starts workflow `execution-<id>` of a pending execution started by something else than the api's execute: a
 * sub-agent's, by its parent's tool call (commands/subAgents.ts). The same workflow options as startExecution's.
 * @param client a Temporal client (the api's, or the worker's own in an activity).
 * @param taskQueue the task queue of execution workflows.
 * @param config the deadline of executions.
 * @param exec the pending execution.
 * @param options `rejectDuplicate`: a workflow of that id that already ran (closed) refuses the start too, so a
 *   repeated start never runs the execution again (WorkflowExecutionAlreadyStartedError either way).
 */
export async function startExecutionWorkflow(
  client: Client,
  taskQueue: string,
  config: Pick<Config, 'executionDeadlineSeconds'>,
  exec: Pick<ExecutionDoc, '_id' | 'organizationId' | 'agentId' | 'provider' | 'model' | 'chatId' | 'sessionId'>,
  options: { rejectDuplicate?: boolean } = {}
): Promise<void> {
  await client.workflow.start<AgentExecutionWorkflow>('agentExecution', {
    ...executionStartOptions({
      executionId: exec._id,
      organizationId: exec.organizationId,
      agentId: exec.agentId,
      deadlineSeconds: config.executionDeadlineSeconds,
      priority: workPriority('interactive', exec.organizationId, await fairnessWeight(exec.organizationId)),
      memo: {
        agentId: exec.agentId,
        model: `${exec.provider}:${exec.model}`,
        chatId: exec.chatId,
        sessionId: exec.sessionId,
      },
    }),
    taskQueue,
    ...(options.rejectDuplicate ? { workflowIdReusePolicy: 'REJECT_DUPLICATE' as const } : {}),
  });
}

/**
 * Starts an execution of an agent, once the process's admission has a slot for it (the one place every surface
 * starts an execution: v1 and client execute, chat messages, the MCP tools; docs/decisions.md "Overload").
 * @param deps configuration, Temporal and the admission.
 * @param auth the caller.
 * @param agentId the agent (visible to the caller, not archived).
 * @param input message and conversation references.
 * @param options `gone`: aborted when the client goes away (it then leaves the line for a slot).
 * @returns the pending execution.
 * @throws ConflictError when the session is already running an execution.
 * @throws OverloadedError (503 + Retry-After) when no slot frees in time or the line is full.
 */
export async function startExecution(
  deps: ExecutionDeps,
  auth: AuthContext,
  agentId: string,
  input: ExecuteInput,
  options: { gone?: AbortSignal } = {}
): Promise<ExecutionDoc> {
  const slot = await deps.admission?.acquire(options.gone, auth.organizationId);
  try {
    // The slot is named after the execution before its workflow starts: the finish may run before the start returns.
    return await startAdmitted(deps, auth, agentId, input, (id) => slot?.bind(id));
  } catch (err) {
    slot?.release();
    throw err;
  }
}

/**
 * Reads which executions no longer need their admission slot (the admission's sweep, for executions that ran in
 * another process): one read by id each (docs/query-shapes.md: no `$in`).
 * @param ids execution ids.
 * @returns those with a terminal status, with no record, or queued for a concurrency key (they take a slot again
 *   when they hold it: lib/executionAdmission.ts `readmitQueued`).
 */
export async function endedExecutions(ids: string[]): Promise<string[]> {
  const found = await Promise.all(
    ids.map((id) => Execution.findById(id).select({ status: 1 }).lean<Pick<ExecutionDoc, '_id' | 'status'>>())
  );
  return ids.filter((_, i) => {
    const exec = found[i];
    return !exec || exec.status === 'queued' || TERMINAL_EXECUTION_STATUSES.includes(exec.status as ExecutionStatus);
  });
}

/** A slot is held at most this long past the execution deadline (an execution lost by the engine stays pending). */
const HOLD_MARGIN_MS = 60_000;
/** The share of a process's slots kept free for organizations under their share (lib/executionAdmission.ts). */
const HEADROOM_SHARE = 0.1;

/**
 * The admission of an api process, from the configuration.
 * @param config EXECUTION_CONCURRENCY, EXECUTION_QUEUE, EXECUTION_QUEUE_WAIT_MS and the execution deadline.
 * @param onError told when the sweep cannot read the database.
 * @returns the admission.
 */
export function createExecutionAdmission(
  config: Pick<Config, 'executionAdmission' | 'executionDeadlineSeconds'>,
  onError: (err: unknown) => void
): ExecutionAdmission {
  return new ExecutionAdmission(
    {
      ...config.executionAdmission,
      holdMs: config.executionDeadlineSeconds * 1000 + HOLD_MARGIN_MS,
      // 2 of the default 20; none below 10 slots.
      headroom: Math.floor(config.executionAdmission.concurrency * HEADROOM_SHARE),
    },
    endedExecutions,
    onError,
    fairnessWeight
  );
}

async function startAdmitted(
  deps: ExecutionDeps,
  auth: AuthContext,
  agentId: string,
  input: ExecuteInput,
  named: (executionId: string) => void
): Promise<ExecutionDoc> {
  // A new conversation in the default space: the space is looked up together with the agent.
  const newInDefaultSpace = input.chatId === undefined && input.sessionId === undefined && input.spaceId === undefined;
  const [agent, defaultSpace, media, , weight] = await Promise.all([
    findVisibleAgent(auth, agentId),
    newInDefaultSpace ? defaultSpaceId(auth) : undefined,
    checkMediaIds(auth, input.mediaIds ?? [], 'mediaIds'),
    // A spent budget refuses the execution (402 budget_exceeded): from the process's cached totals, no round trip.
    refuseWhenSpent(deps.config, auth.organizationId, agentId),
    // The organization's Temporal fairness weight (a cached read, alongside the others).
    fairnessWeight(auth.organizationId),
  ]);
  const executionId = input.executionId ?? newExecutionId();
  named(executionId);
  const { chat, session, needsLock, createdChat, insertChat } = await resolveConversation(
    auth,
    agent._id,
    agent.name,
    executionId,
    input,
    defaultSpace
  );
  const locked: ConversationSession = needsLock ? await takeTurn(auth.organizationId, session, executionId) : session;
  const release = (): Promise<unknown> => releaseTurn(chat, session, executionId, createdChat === true);
  try {
    // The chat's model option wins over the agent's (PATCH /api/chats/{id}/options).
    const resolved = resolveModel(chat.model ?? agent.model, deps.config);
    checkMediaForModel(media, resolved.provider, 'mediaIds');
    let root = executionId;
    if (input.parentExecutionId) {
      const parent = await Execution.findOne({
        _id: input.parentExecutionId,
        organizationId: auth.organizationId,
      }).lean();
      if (!parent) throw new ValidationError('Invalid parentExecutionId');
      root = parent.rootExecutionId;
    }
    // The agent's limit first, then the caller's key: every execution claims them in that order (no two wait for
    // each other's key).
    const concurrency = [
      ...(agent.maxConcurrentExecutions ? [{ key: `agent:${agent._id}`, limit: agent.maxConcurrentExecutions }] : []),
      ...(input.concurrencyKey ? [{ key: `key:${input.concurrencyKey}`, limit: input.concurrencyLimit ?? 1 }] : []),
    ];
    // An eager start claims its execution itself: recorded `running`, handed to its reply in this process (no claim
    // round trip: commands/executionClaim.ts).
    const { eager } = deps.temporal;
    const claim = eagerClaimFields({
      eager: eager !== undefined,
      concurrency: concurrency.length > 0,
      rerun: input.rerun !== undefined,
    });
    const execution = await recordBesideChat(insertChat, {
      _id: executionId,
      organizationId: auth.organizationId,
      agentId: agent._id,
      userId: auth.userId,
      chatId: chat._id,
      sessionId: locked._id,
      spaceId: chat.spaceId,
      turn: locked.turns,
      ...(locked.onChat ? { sessionOnChat: true } : {}),
      message: input.message,
      provider: resolved.provider,
      model: resolved.model,
      modelNote: resolved.note ?? null,
      parentExecutionId: input.parentExecutionId ?? null,
      rootExecutionId: root,
      taskId: input.taskId ?? null,
      source: input.source,
      chatSeqBase: locked.chatStreamSeq ?? 0,
      mediaIds: input.mediaIds,
      ...(createdChat ? { chatShowsWorking: true } : {}),
      ...(input.rerun ? { rerun: input.rerun } : {}),
      ...(concurrency.length ? { concurrency } : {}),
      ...(input.maxTokens !== undefined || input.maxCostUsd !== undefined
        ? {
            runCap: {
              ...(input.maxTokens !== undefined ? { maxTokens: input.maxTokens } : {}),
              ...(input.maxCostUsd !== undefined ? { maxCostUsd: input.maxCostUsd } : {}),
            },
          }
        : {}),
      ...claim,
    });
    if (claim.eagerClaim) handOver(execution);
    try {
      // Eager start when this process runs a worker (docs/architecture.md §1): the first workflow task, which runs the
      // whole reply, comes back in the start call's answer and runs here; refused (no free slot, the server's
      // limits), the execution waits for any worker. The native client has no call deadline of its own: given here.
      const client = eager ?? deps.temporal.client;
      const start = (): Promise<{ eagerlyStarted: boolean }> =>
        client.workflow.start<AgentExecutionWorkflow>('agentExecution', {
          ...executionStartOptions({
            executionId,
            organizationId: auth.organizationId,
            agentId: agent._id,
            deadlineSeconds: deps.config.executionDeadlineSeconds,
            priority: workPriority('interactive', auth.organizationId, weight),
            concurrency: concurrency.length > 0,
            memo: {
              agentId: agent._id,
              model: `${resolved.provider}:${resolved.model}`,
              chatId: chat._id,
              sessionId: locked._id,
            },
          }),
          requestEagerStart: eager !== undefined,
          taskQueue: deps.temporal.taskQueue,
        });
      // The native client retries a server that is down past its call deadline (its own retry policy, ~10 s): the
      // start is abandoned in time to mark the execution failed before the request's deadline, and a start that
      // lands later finds it failed (start_failed) and ends at once, so a request answered 503 never runs.
      const bound = callTimeLeft(deps.config.dependencyTimeoutMs, START_FAILURE_RESERVE_MS);
      const startedAt = Date.now();
      const handle = await withDeadline(
        eager ? eager.withDeadline(Date.now() + bound, start) : start(),
        bound,
        'Temporal (start of the execution)'
      );
      if (handle.eagerlyStarted) {
        executionsStartedEagerly.inc();
        // Its reply begins now, in this process (activities/executionRun.ts): its local activity takes it over.
        if (claim.eagerClaim) beginEarly(executionId, startedAt, deps.config.executionDeadlineSeconds);
      }
      // Not eager after all (refused: no free slot, the server's limits): its first attempt may run in any process,
      // and claims it in the database.
      else if (claim.eagerClaim) dropHandOver(executionId);
    } catch (err) {
      // The start failed after its first workflow task came back and its reply took the record here (the native
      // call answered just past the request's deadline): the reply is stopped directly, and its own finish records
      // the end (cancelled). Otherwise the record is taken back and marked failed.
      if (claim.eagerClaim && !dropHandOver(executionId) && abortRunningCall(executionId))
        throw new ServiceUnavailableError();
      await Execution.updateOne(
        // An eager start's record is `running` (with `eagerClaim`) until a reply claims it.
        { _id: executionId, $or: [{ status: 'pending' }, { status: 'running', eagerClaim: true }] },
        {
          $set: {
            status: 'failed',
            error: { message: 'Could not start the execution', code: 'start_failed' },
            completedAt: new Date(),
          },
        }
      );
      const seq = (input.rerun?.events.length ?? 0) + 2;
      await appendEvents(executionId, [{ seq, event: 'error', data: { message: 'Chat execution failed' } }]);
      throw err instanceof AppError ? err : new ServiceUnavailableError();
    }
    executionsStarted.inc({ source: input.source });
    return execution;
  } catch (err) {
    await release();
    throw err;
  }
}
