/**
 * Agent executions from the api side: resolve (or create) the chat and session, take the session's lock, write the
 * pending execution, its user message and its `meta` event, and start workflow `execution-<id>`. Reads, the
 * execution tree, cancellation, and waiting for the outcome.
 */
import type { Client } from '@temporalio/client';
import { TypedSearchAttributes } from '@temporalio/common';
import type { Config } from '../lib/config';
import { appendEvents, type LoggedEvent } from './eventLog';
import { ExecutionAdmission } from '../lib/executionAdmission';
import { AppError, ConflictError, NotFoundError, ServiceUnavailableError, ValidationError } from '../lib/errors';
import { newExecutionId, newId } from '../lib/ids';
import { insertDocument, isDuplicateKey } from '../lib/mongo';
import { paginate } from '../lib/pagination';
import { executionsStarted, executionsStartedEagerly } from '../lib/metrics';
import { resolveModel } from '../lib/providers';
import { withDeadline } from '../lib/deadline';
import { currentRequestId } from '../lib/requestContext';
import { callTimeLeft } from '../lib/requestDeadline';
import { whileTemporalAnswers, type TemporalDeps } from '../lib/temporal';
import {
  Chat,
  ChatMessage,
  chatStatusOf,
  Execution,
  Session,
  SessionTurn,
  Space,
  TERMINAL_EXECUTION_STATUSES,
  type ChatDoc,
  type ExecutionDoc,
  type ExecutionStatus,
  type SessionDoc,
  type SessionTurnDoc,
} from '../models';
import type { AgentExecutionOutcome, AgentExecutionWorkflow } from '../workflows/definitions';
import { abortRunningCall, broadcastAbort } from '../lib/runningCalls';
import { EXECUTION_SHAPE, EXECUTION_TASK_TIMEOUT, executionWorkflowId } from '../workflows/ids';
import { agentIdKey, organizationIdKey, workKindKey } from '../workflows/searchAttributes';
import { findVisibleAgent } from './agents';
import { checkMediaForModel, checkMediaIds } from './media';
import { defaultSpaceId } from './defaultSpace';
import type { EventDeps } from './serviceEvents';
import type { AuthContext } from './tokens';

const NOT_FOUND = 'Execution not found';

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

/**
 * Finds the conversation an execution continues, or opens a new one. A session created here is created already
 * held by the execution (`activeExecutionId`, turn 1), so a new conversation needs no lock round trip.
 * @param defaultSpace the default space id when the caller already looked it up (a new conversation names none).
 * @returns the chat and the session, whether the session still has to be locked, and whether the chat was created
 *   here (then already showing its execution's status: `working`).
 */
async function resolveConversation(
  auth: AuthContext,
  agentId: string,
  agentName: string,
  executionId: string,
  input: ExecuteInput,
  defaultSpace?: string
): Promise<{ chat: ChatDoc; session: SessionDoc; needsLock: boolean; createdChat?: boolean }> {
  const org = auth.organizationId;
  const newSession = (chatId: string, sessionId = newId('ses')): Promise<SessionDoc> =>
    insertDocument(Session, {
      _id: sessionId,
      organizationId: org,
      chatId,
      agentId,
      activeExecutionId: executionId,
      turns: 1,
    }) as Promise<SessionDoc>;
  if (input.chatId !== undefined) {
    const chat = await Chat.findOne({ _id: input.chatId, organizationId: org }).lean<ChatDoc>();
    if (!chat) throw new NotFoundError('Chat not found');
    let session = chat.sessionId
      ? await Session.findOne({ _id: chat.sessionId, organizationId: org }).lean<SessionDoc>()
      : null;
    if (input.sessionId !== undefined && session?._id !== input.sessionId) {
      const other = await Session.findOne({ _id: input.sessionId, organizationId: org }).lean<SessionDoc>();
      if (!other) throw new NotFoundError('Session not found');
      if (other.chatId !== chat._id) throw new ValidationError('sessionId does not belong to chatId');
      session = other;
    }
    if (session) return { chat, session, needsLock: true };
    // A chat without a session yet (the one created with its agent): its first execution opens the session.
    const created = await newSession(chat._id);
    await Chat.updateOne({ _id: chat._id, organizationId: org }, { $set: { sessionId: created._id } });
    return { chat: { ...chat, sessionId: created._id }, session: created, needsLock: false };
  }
  if (input.sessionId !== undefined) {
    const session = await Session.findOne({ _id: input.sessionId, organizationId: org }).lean<SessionDoc>();
    if (!session) throw new NotFoundError('Session not found');
    const chat = await Chat.findOne({ _id: session.chatId, organizationId: org }).lean<ChatDoc>();
    if (!chat) throw new NotFoundError('Chat not found');
    return { chat, session, needsLock: true };
  }
  let spaceId: string;
  if (input.spaceId !== undefined) {
    const space = await Space.findOne({ _id: input.spaceId, organizationId: org, deletedAt: null }).lean();
    if (!space || (space.visibility === 'private' && space.ownerId !== auth.userId)) {
      throw new ValidationError('Invalid spaceId: space not found');
    }
    spaceId = space._id;
  } else {
    spaceId = defaultSpace ?? (await defaultSpaceId(auth));
  }
  // Both ids are made here, so the chat and its session are written together. The chat is created showing its
  // execution's status (pending: `working`), so the reply does not write it again when it starts.
  const chatId = newId('chat');
  const sessionId = newId('ses');
  const [chat, session] = await Promise.all([
    insertDocument(Chat, {
      _id: chatId,
      organizationId: org,
      spaceId,
      agentId,
      ownerId: auth.userId,
      title: agentName,
      sessionId,
      status: chatStatusOf('pending'),
    }) as Promise<ChatDoc>,
    newSession(chatId, sessionId),
  ]);
  return { chat, session, needsLock: false, createdChat: true };
}

/** A turn claim older than this whose session never became busy belongs to a request that died in between. */
const STALE_TURN_CLAIM_MS = 60_000;

/**
 * Claims the session's next turn by inserting its unique id (the one exclusive write on both servers:
 * models/SessionTurn.ts). A claim left by a request that died before marking the session busy (the session, read
 * just before, is still at that turn and idle) is taken over once it is a minute old.
 * @param organizationId the caller's organization.
 * @param session the session as just read (idle).
 * @param executionId the execution that wants the turn.
 * @returns the claim's id, or null when another request holds the turn.
 */
async function claimTurn(organizationId: string, session: SessionDoc, executionId: string): Promise<string | null> {
  const turnId = `${session._id}:${session.turns + 1}`;
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      await SessionTurn.create({ _id: turnId, organizationId, executionId });
      return turnId;
    } catch (err) {
      if (!isDuplicateKey(err)) throw err;
      const claim = await SessionTurn.findById(turnId).lean<SessionTurnDoc>();
      if (claim && Date.now() - claim.createdAt.getTime() < STALE_TURN_CLAIM_MS) return null;
      if (claim) await SessionTurn.deleteOne({ _id: turnId, executionId: claim.executionId });
    }
  }
  return null;
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
  chatSeqBase: number;
  mediaIds?: string[];
  /** The api created the chat with this execution, already showing `working`: the reply does not write it. */
  chatShowsWorking?: boolean;
}

const ignoreDuplicate = (err: unknown): void => {
  if (!isDuplicateKey(err)) throw err;
};

/**
 * The first event of every execution's stream, written by the api before the workflow starts: until the workflow
 * claims the pending execution, it is the stream's only event.
 * @param exec the execution's ids.
 * @returns the `meta` event (seq 1).
 */
export function metaEvent(exec: { _id: string; chatId: string; sessionId: string }): LoggedEvent {
  return { seq: 1, event: 'meta', data: { executionId: exec._id, chatId: exec.chatId, sessionId: exec.sessionId } };
}

/**
 * Writes a pending execution, its user message and its `meta` event (each by a deterministic id: a repeat, such as
 * a retried job activity, writes nothing twice). Its workflow is started by the caller.
 * @param p the execution's fields.
 * @returns the execution as stored.
 */
export async function recordPendingExecution(p: PendingExecution): Promise<ExecutionDoc> {
  const { message, mediaIds, ...rest } = p;
  const fields = { ...rest, requestId: p.requestId ?? currentRequestId() ?? null };
  // Three inserts by known ids, independent of each other: written together (each is idempotent).
  const [stored] = await Promise.all([
    (
      insertDocument(Execution, {
        ...fields,
        input: { message, ...(mediaIds?.length ? { mediaIds } : {}) },
      }) as Promise<ExecutionDoc>
    ).catch(async (err: unknown) => {
      ignoreDuplicate(err);
      return Execution.findById(p._id).lean<ExecutionDoc>();
    }),
    insertDocument(ChatMessage, {
      _id: `${p._id}:user`,
      organizationId: p.organizationId,
      chatId: p.chatId,
      sessionId: p.sessionId,
      executionId: p._id,
      role: 'user',
      content: message,
      position: p.turn * 2,
    }).catch(ignoreDuplicate),
    appendEvents(p._id, [metaEvent({ _id: p._id, chatId: p.chatId, sessionId: p.sessionId })]),
  ]);
  if (!stored) throw new NotFoundError(NOT_FOUND);
  return stored;
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
    workflowId: executionWorkflowId(exec._id),
    taskQueue,
    args: [{ executionId: exec._id, deadlineSeconds: config.executionDeadlineSeconds, shape: EXECUTION_SHAPE }],
    ...(options.rejectDuplicate ? { workflowIdReusePolicy: 'REJECT_DUPLICATE' as const } : {}),
    typedSearchAttributes: new TypedSearchAttributes([
      { key: organizationIdKey, value: exec.organizationId },
      { key: agentIdKey, value: exec.agentId },
      { key: workKindKey, value: 'execution' },
    ]),
    // Ids and the model only: no user text (docs/decisions.md "Observability: private payloads").
    memo: {
      agentId: exec.agentId,
      model: `${exec.provider}:${exec.model}`,
      chatId: exec.chatId,
      sessionId: exec.sessionId,
    },
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
  const slot = await deps.admission?.acquire(options.gone);
  try {
    // The slot is named after the execution before its workflow starts: the finish may run before the start returns.
    return await startAdmitted(deps, auth, agentId, input, (id) => slot?.bind(id));
  } catch (err) {
    slot?.release();
    throw err;
  }
}

/**
 * Reads which executions ended (the admission's sweep, for executions that ran in another process): one read by id
 * each (docs/query-shapes.md: no `$in`).
 * @param ids execution ids.
 * @returns those with a terminal status, or with no record.
 */
export async function endedExecutions(ids: string[]): Promise<string[]> {
  const found = await Promise.all(
    ids.map((id) => Execution.findById(id).select({ status: 1 }).lean<Pick<ExecutionDoc, '_id' | 'status'>>())
  );
  return ids.filter((_, i) => {
    const exec = found[i];
    return !exec || TERMINAL_EXECUTION_STATUSES.includes(exec.status as ExecutionStatus);
  });
}

/** A slot is held at most this long past the execution deadline (an execution lost by the engine stays pending). */
const HOLD_MARGIN_MS = 60_000;

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
    { ...config.executionAdmission, holdMs: config.executionDeadlineSeconds * 1000 + HOLD_MARGIN_MS },
    endedExecutions,
    onError
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
  const [agent, defaultSpace, media] = await Promise.all([
    findVisibleAgent(auth, agentId),
    newInDefaultSpace ? defaultSpaceId(auth) : undefined,
    checkMediaIds(auth, input.mediaIds ?? [], 'mediaIds'),
  ]);
  const executionId = input.executionId ?? newExecutionId();
  named(executionId);
  const { chat, session, needsLock, createdChat } = await resolveConversation(
    auth,
    agent._id,
    agent.name,
    executionId,
    input,
    defaultSpace
  );
  const busy = (): ConflictError =>
    new ConflictError('Session is busy: an execution is still running in it; wait for it to finish or cancel it');
  let locked: SessionDoc | null = session;
  if (needsLock) {
    if (session.activeExecutionId) throw busy();
    const turnId = await claimTurn(auth.organizationId, session, executionId);
    if (!turnId) throw busy();
    const unclaim = (): Promise<unknown> => SessionTurn.deleteOne({ _id: turnId, executionId }).catch(() => undefined);
    locked = await Session.findOneAndUpdate(
      { _id: session._id, organizationId: auth.organizationId, activeExecutionId: null },
      { $set: { activeExecutionId: executionId }, $inc: { turns: 1 } },
      { new: true }
    )
      .lean<SessionDoc>()
      .catch(async (err: unknown) => {
        await unclaim();
        throw err;
      });
    if (!locked) {
      await unclaim();
      throw busy();
    }
  }
  const release = (): Promise<unknown> =>
    Promise.all([
      Session.updateOne({ _id: session._id, activeExecutionId: executionId }, { $set: { activeExecutionId: null } }),
      // A chat created for this execution goes back to the status it had before (the default) when it never runs.
      createdChat ? Chat.updateOne({ _id: chat._id }, { $set: { status: 'standby' } }) : undefined,
    ]);
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
    const execution = await recordPendingExecution({
      _id: executionId,
      organizationId: auth.organizationId,
      agentId: agent._id,
      userId: auth.userId,
      chatId: chat._id,
      sessionId: session._id,
      spaceId: chat.spaceId,
      turn: locked.turns,
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
    });
    try {
      // Eager start when this process runs a worker (docs/architecture.md §1): the first workflow task, which runs the
      // whole reply, comes back in the start call's answer and runs here; refused (no free slot, the server's
      // limits), the execution waits for any worker. The native client has no call deadline of its own: given here.
      const { eager } = deps.temporal;
      const client = eager ?? deps.temporal.client;
      const start = (): Promise<{ eagerlyStarted: boolean }> =>
        client.workflow.start<AgentExecutionWorkflow>('agentExecution', {
          requestEagerStart: eager !== undefined,
          workflowId: executionWorkflowId(executionId),
          taskQueue: deps.temporal.taskQueue,
          args: [{ executionId, deadlineSeconds: deps.config.executionDeadlineSeconds, shape: EXECUTION_SHAPE }],
          workflowTaskTimeout: EXECUTION_TASK_TIMEOUT,
          typedSearchAttributes: new TypedSearchAttributes([
            { key: organizationIdKey, value: auth.organizationId },
            { key: agentIdKey, value: agent._id },
            { key: workKindKey, value: 'execution' },
          ]),
          // Ids and the model only: no user text (docs/decisions.md "Observability: private payloads").
          memo: {
            agentId: agent._id,
            model: `${resolved.provider}:${resolved.model}`,
            chatId: chat._id,
            sessionId: session._id,
          },
        });
      // The native client retries a server that is down past its call deadline (its own retry policy, ~10 s): the
      // start is abandoned in time to mark the execution failed before the request's deadline, and a start that
      // lands later finds it failed (start_failed) and ends at once, so a request answered 503 never runs.
      const bound = callTimeLeft(deps.config.dependencyTimeoutMs, START_FAILURE_RESERVE_MS);
      const handle = await withDeadline(
        eager ? eager.withDeadline(Date.now() + bound, start) : start(),
        bound,
        'Temporal (start of the execution)'
      );
      if (handle.eagerlyStarted) executionsStartedEagerly.inc();
    } catch (err) {
      await Execution.updateOne(
        { _id: executionId, status: 'pending' },
        {
          $set: {
            status: 'failed',
            error: { message: 'Could not start the execution', code: 'start_failed' },
            completedAt: new Date(),
          },
        }
      );
      await appendEvents(executionId, [{ seq: 2, event: 'error', data: { message: 'Chat execution failed' } }]);
      throw err instanceof AppError ? err : new ServiceUnavailableError();
    }
    executionsStarted.inc({ source: input.source });
    return execution;
  } catch (err) {
    await release();
    throw err;
  }
}

/**
 * @param auth the caller.
 * @param id execution id.
 * @returns the execution of the caller's organization.
 */
export async function findExecution(auth: AuthContext, id: string): Promise<ExecutionDoc> {
  const exec = await Execution.findOne({ _id: id, organizationId: auth.organizationId }).lean<ExecutionDoc>();
  if (!exec) throw new NotFoundError(NOT_FOUND);
  return exec;
}

/**
 * Waits until the execution's workflow has finished.
 * @param deps Temporal.
 * @param id execution id.
 * @returns its final status and reply.
 */
export async function awaitExecution(deps: ExecutionDeps, id: string): Promise<{ status: string; result: string }> {
  const handle = deps.temporal.client.workflow.getHandle<AgentExecutionWorkflow>(executionWorkflowId(id));
  // While Temporal is away the wait ends with 503 (the execution itself goes on: GET /executions/{id} reads it).
  const outcome = (await whileTemporalAnswers(deps.temporal, deps.config.dependencyTimeoutMs, () =>
    handle.result()
  )) as AgentExecutionOutcome | undefined;
  // The workflow returns its reply; workflows started before it did are read back from the record.
  if (outcome?.status && (outcome.status !== 'completed' || outcome.text !== undefined))
    return { status: outcome.status, result: outcome.text ?? '' };
  const exec = await Execution.findById(id).lean<ExecutionDoc>();
  if (!exec) throw new NotFoundError(NOT_FOUND);
  return { status: exec.status, result: exec.result ?? '' };
}

/**
 * @param auth the caller.
 * @param filters agentId, status and taskId.
 * @param page limit and cursor.
 * @returns executions of the caller's organization, newest first.
 */
export async function listExecutions(
  auth: AuthContext,
  filters: { agentId?: string; status?: string; taskId?: string },
  page: { limit: number; cursor?: string }
): Promise<{ items: ExecutionDoc[]; nextCursor: string | null }> {
  const filter: Record<string, string> = { organizationId: auth.organizationId };
  if (filters.agentId) filter.agentId = filters.agentId;
  if (filters.status) filter.status = filters.status;
  if (filters.taskId) filter.taskId = filters.taskId;
  return paginate<ExecutionDoc>(Execution, filter, page);
}

/**
 * @param auth the caller.
 * @param id execution id.
 * @returns the execution and every execution below it (children by parentExecutionId).
 */
export async function executionTree(
  auth: AuthContext,
  id: string
): Promise<{ root: ExecutionDoc; all: ExecutionDoc[] }> {
  const root = await findExecution(auth, id);
  const family = await Execution.find({ organizationId: auth.organizationId, rootExecutionId: root.rootExecutionId })
    .sort({ createdAt: 1 })
    .limit(1000)
    .lean<ExecutionDoc[]>();
  return { root, all: family };
}

/**
 * Cancels the running sub-agents of an execution, and theirs (workflow cancellation; a child whose workflow never
 * started is marked cancelled). Each child's own finish frees its session and writes its terminal event.
 * @param client a Temporal client.
 * @param parent the execution.
 * @returns how many children were asked to stop.
 */
export async function cancelSubAgents(
  client: Client,
  parent: Pick<ExecutionDoc, '_id' | 'organizationId'>
): Promise<number> {
  // By the parent (its index's leading field), within its organization (docs/query-shapes.md).
  const children = await Execution.find({ parentExecutionId: parent._id, organizationId: parent.organizationId })
    .select({ _id: 1, organizationId: 1, status: 1, parentToolCallId: 1 })
    .limit(100)
    .lean<Array<Pick<ExecutionDoc, '_id' | 'organizationId' | 'status' | 'parentToolCallId'>>>();
  const running = children.filter(
    (c) => c.parentToolCallId && !TERMINAL_EXECUTION_STATUSES.includes(c.status as ExecutionStatus)
  );
  await Promise.all(
    running.map(async (c) => {
      try {
        await client.workflow.getHandle(executionWorkflowId(c._id)).cancel();
      } catch (err) {
        if ((err as Error).name !== 'WorkflowNotFoundError') throw err;
        // Never started (its parent stopped in between), or already closed: a pending one ends here.
        await Execution.updateOne(
          { _id: c._id, status: 'pending' },
          {
            $set: {
              status: 'cancelled',
              error: { message: 'Execution cancelled', code: 'cancelled' },
              completedAt: new Date(),
            },
          }
        );
      }
      await cancelSubAgents(client, c);
    })
  );
  return running.length;
}

/**
 * Stops an execution's running reply at once (direct cancel, lib/runningCalls.ts): records that a cancel was
 * requested (what another process checks before acting, and what a reply starting later sees), then aborts the
 * reply in this process, or asks the other processes to. Temporal's cancellation is the caller's to request too.
 * @param executionId the execution (of the caller's organization: checked by the caller).
 */
export async function abortReply(executionId: string): Promise<void> {
  await Execution.updateOne({ _id: executionId }, { $set: { cancelRequestedAt: new Date() } });
  if (!abortRunningCall(executionId)) await broadcastAbort(executionId);
}

/**
 * Cancels a pending or running execution: its workflow is cancelled (so nothing resumes it after a crash), then its
 * running reply is aborted directly ({@link abortReply}); then waits briefly for the workflow to record it.
 * @param deps Temporal.
 * @param auth the caller.
 * @param id execution id.
 * @returns the execution after cancellation (normally `cancelled`).
 */
export async function cancelExecution(
  deps: Pick<ExecutionDeps, 'temporal'>,
  auth: AuthContext,
  id: string
): Promise<ExecutionDoc> {
  const exec = await findExecution(auth, id);
  if (TERMINAL_EXECUTION_STATUSES.includes(exec.status as never)) {
    throw new ValidationError('Only pending or running executions can be cancelled');
  }
  // Temporal's cancellation first: when the engine is away the cancel fails (503) and nothing is stopped.
  await deps.temporal.client.workflow.getHandle(executionWorkflowId(id)).cancel();
  await abortReply(id);
  // Its running sub-agents at once (its own finish cancels them too, once its worker sees the cancellation).
  await cancelSubAgents(deps.temporal.client, exec);
  const deadline = Date.now() + 5000;
  for (;;) {
    const now = await Execution.findById(id).lean<ExecutionDoc>();
    if (!now || TERMINAL_EXECUTION_STATUSES.includes(now.status as never) || Date.now() > deadline) return now ?? exec;
    await new Promise((r) => setTimeout(r, 50));
  }
}
