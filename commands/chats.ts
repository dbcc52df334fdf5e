/**
 * Durable chats of the current surface (/api/chats) over the same Chat, Session and ChatMessage records the v1
 * executions use [docs/decisions.md "Chats"]: create (agent and workspace of the organization), list, read the
 * messages with the work linked to them, send a message (an execution through commands/executionStart.ts, in the
 * chat's session: one at a time), change the chat's options, and close (hide) a chat, cancelling its running work.
 */
import { ConflictError, NotFoundError, ValidationError } from '../lib/errors';
import { newId } from '../lib/ids';
import { paginate } from '../lib/pagination';
import {
  Chat,
  Execution,
  Session,
  TERMINAL_EXECUTION_STATUSES,
  type ChatDoc,
  type ChatMessageDoc,
  type ChatStatus,
  type ExecutionDoc,
} from '../models';
import { executionWorkflowId } from '../workflows/ids';
import { findOrganizationAgent } from './agents';
import { messagesPage } from './chatMessageReads';
import { holdsSession, sessionFields } from './conversations';
import { startExecution, type ExecutionDeps } from './executionStart';
import { abortReply, cancelSubAgents } from './executions';
import { findVisibleSpace } from './spaces';
import type { AuthContext } from './tokens';

const NOT_FOUND = 'Chat not found';

export interface ChatCreateInput {
  agentId: string;
  /** Default: the caller's active workspace (POST /api/workspaces/{id}/select). */
  workspaceId?: string;
  title?: string;
  model?: string | null;
}

export interface ChatOptionsInput {
  title?: string;
  model?: string | null;
}

/**
 * Creates a chat holding its session (so that every message takes the session's turn claim).
 * @param auth the caller.
 * @param input agent, workspace (or the caller's active one), title, model.
 * @returns the chat.
 * @throws ValidationError naming `agent_id` or `workspace_id` when it is missing or names nothing the caller
 *   can use in its organization.
 */
export async function createChat(auth: AuthContext, input: ChatCreateInput): Promise<ChatDoc> {
  const agent = await findOrganizationAgent(auth, input.agentId).catch((err: unknown) => {
    throw err instanceof NotFoundError ? new ValidationError('Invalid agent_id: agent not found') : err;
  });
  const workspaceId = input.workspaceId ?? auth.activeWorkspaceId;
  if (!workspaceId) throw new ValidationError('Missing required field: workspace_id');
  const space = await findVisibleSpace(auth, workspaceId).catch((err: unknown) => {
    throw err instanceof NotFoundError ? new ValidationError('Invalid workspace_id: workspace not found') : err;
  });
  if (space.organizationId !== auth.organizationId)
    throw new ValidationError('Invalid workspace_id: workspace not found');
  const chatId = newId('chat');
  // The chat holds its session (commands/conversations.ts): one insert.
  const chat = await Chat.create({
    _id: chatId,
    organizationId: auth.organizationId,
    spaceId: space._id,
    agentId: agent._id,
    ownerId: auth.userId,
    title: input.title ?? agent.name,
    model: input.model ?? null,
    ...sessionFields(chatId),
  });
  return chat.toObject() as ChatDoc;
}

/**
 * @param auth the caller.
 * @param id chat id.
 * @returns the open chat of the caller's organization.
 * @throws NotFoundError `Chat not found` otherwise (closed chats included).
 */
export async function findChat(auth: AuthContext, id: string): Promise<ChatDoc> {
  const chat = await Chat.findOne({ _id: id, organizationId: auth.organizationId }).lean<ChatDoc>();
  if (!chat || chat.closed) throw new NotFoundError(NOT_FOUND);
  return chat;
}

/**
 * @param chatId a chat's id (already checked to be the caller's).
 * @returns whether it was closed (DELETE) or is gone.
 */
export async function isChatClosed(chatId: string): Promise<boolean> {
  const chat = await Chat.findById(chatId, { closed: 1 }).lean<Pick<ChatDoc, 'closed'>>();
  return !chat || chat.closed === true;
}

/**
 * @param auth the caller.
 * @param filters status, agent and workspace (each an equality with its index).
 * @param page limit and cursor.
 * @returns the organization's open chats, newest first.
 */
export async function listChats(
  auth: AuthContext,
  filters: { status?: ChatStatus; agentId?: string; workspaceId?: string },
  page: { limit: number; cursor?: string }
): Promise<{ items: ChatDoc[]; nextCursor: string | null }> {
  const filter: Record<string, unknown> = { organizationId: auth.organizationId, closed: false };
  if (filters.status) filter.status = filters.status;
  if (filters.agentId) filter.agentId = filters.agentId;
  if (filters.workspaceId) filter.spaceId = filters.workspaceId;
  return paginate<ChatDoc>(Chat, filter, page);
}

/**
 * One page of a chat's messages in conversation order, with the executions they belong to (read by id).
 * @param auth the caller.
 * @param id chat id.
 * @param page limit, and the position after which to start.
 * @returns the chat, the messages, their executions (in message order) and the next page's position.
 */
export async function chatMessages(
  auth: AuthContext,
  id: string,
  page: { limit: number; after?: number }
): Promise<{ chat: ChatDoc; messages: ChatMessageDoc[]; executions: ExecutionDoc[]; next: number | null }> {
  const chat = await findChat(auth, id);
  const docs = await messagesPage(auth.organizationId, chat._id, page.after ?? -1, page.limit + 1);
  const more = docs.length > page.limit;
  const messages = more ? docs.slice(0, page.limit) : docs;
  const executionIds = [...new Set(messages.map((m) => m.executionId))];
  const executions = await Promise.all(
    executionIds.map((e) => Execution.findOne({ _id: e, organizationId: auth.organizationId }).lean<ExecutionDoc>())
  );
  return {
    chat,
    messages,
    executions: executions.filter((e): e is ExecutionDoc => e !== null),
    next: more ? messages[messages.length - 1].position : null,
  };
}

/**
 * Sends a message: starts an execution of the chat's agent in the chat's session (commands/executionStart.ts), which
 * refuses it with 409 while the session's previous execution still runs.
 * @param deps configuration and Temporal.
 * @param auth the caller.
 * @param id chat id.
 * @param message the user message.
 * @param options `gone`: aborted when the client goes away (while it waits for the execution's admission).
 * @returns the pending execution.
 */
export async function sendChatMessage(
  deps: ExecutionDeps,
  auth: AuthContext,
  id: string,
  message: string,
  options: { gone?: AbortSignal; concurrencyKey?: string; concurrencyLimit?: number } = {}
): Promise<ExecutionDoc> {
  const chat = await findChat(auth, id);
  if (!chat.agentId) throw new ConflictError('This chat has no agent to answer it');
  // A chat made with its agent on the v1 surface gets its session with its first message (commands/conversations.ts).
  const { concurrencyKey, concurrencyLimit, gone } = options;
  return startExecution(
    deps,
    auth,
    chat.agentId,
    { message, chatId: chat._id, source: 'chat', concurrencyKey, concurrencyLimit },
    { gone }
  );
}

/**
 * @param auth the caller.
 * @param id chat id.
 * @param input the options to change (omitted ones unchanged; `model: null` returns to the agent's model).
 * @returns the chat after the change.
 */
export async function updateChatOptions(auth: AuthContext, id: string, input: ChatOptionsInput): Promise<ChatDoc> {
  const chat = await findChat(auth, id);
  const set: Record<string, unknown> = {};
  if (input.title !== undefined) set.title = input.title;
  if (input.model !== undefined) set.model = input.model;
  if (Object.keys(set).length > 0)
    await Chat.updateOne({ _id: chat._id, organizationId: auth.organizationId }, { $set: set });
  return findChat(auth, id);
}

/**
 * Closes a chat: it disappears from the list and its routes answer 404; an execution still running in it is
 * cancelled (workflow cancellation, as POST /api/v1/executions/{id}/cancel does), without waiting for it.
 * @param deps Temporal.
 * @param auth the caller.
 * @param id chat id.
 * @returns the id of the execution that was cancelled, if any.
 */
export async function closeChat(
  deps: Pick<ExecutionDeps, 'temporal'>,
  auth: AuthContext,
  id: string
): Promise<string | null> {
  const chat = await findChat(auth, id);
  // Cancel first: should Temporal be unreachable (503), the chat stays open and the client's retry does it all.
  const cancelled = await cancelRunning(deps, auth, chat);
  await Chat.updateOne(
    { _id: chat._id, organizationId: auth.organizationId },
    { $set: { closed: true, closedAt: new Date() } }
  );
  return cancelled;
}

/** @returns the id of the execution running in the chat that was cancelled, if any. */
async function cancelRunning(
  deps: Pick<ExecutionDeps, 'temporal'>,
  auth: AuthContext,
  chat: ChatDoc
): Promise<string | null> {
  // The session is on the chat, or (recorded before) in its `sessions` document.
  const session = holdsSession(chat)
    ? chat
    : chat.sessionId
      ? await Session.findOne({ _id: chat.sessionId, organizationId: auth.organizationId }).lean()
      : null;
  const running = session?.activeExecutionId;
  if (!running) return null;
  const exec = await Execution.findOne({ _id: running, organizationId: auth.organizationId }).lean<ExecutionDoc>();
  if (!exec || TERMINAL_EXECUTION_STATUSES.includes(exec.status as never)) return null;
  await deps.temporal.client.workflow
    .getHandle(executionWorkflowId(running))
    .cancel()
    .catch((err: unknown) => {
      // Already finished (or never started): nothing left to cancel.
      if ((err as { name?: string }).name !== 'WorkflowNotFoundError') throw err;
    });
  // The running reply stops at once (commands/executions.ts abortReply), and its running sub-agents
  // (commands/subAgents.ts).
  await abortReply(running);
  await cancelSubAgents(deps.temporal.client, exec);
  return running;
}
