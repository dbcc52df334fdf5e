/**
 * Reads of a chat's messages (issue 37 lever 3). An execution's messages are on its record: the user message is its
 * `input.message`, and the reply of a completed execution its `result` (the outcome write records it). The api no
 * longer writes the user message as a `chat_messages` document, nor the finish the reply (two writes fewer per
 * execution). `chat_messages` keeps the messages of executions recorded before and the copies a fork makes; a read
 * takes both and, at a position that has both (an execution recorded before), the stored document.
 */
import mongoose from 'mongoose';
import { ChatMessage, Execution, type ChatMessageDoc, type ExecutionDoc } from '../models';

/** The fields of an execution its messages are made of. */
type MessagesSource = Pick<
  ExecutionDoc,
  | '_id'
  | 'organizationId'
  | 'chatId'
  | 'sessionId'
  | 'turn'
  | 'input'
  | 'createdAt'
  | 'status'
  | 'result'
  | 'completedAt'
>;

/** What a read of executions needs for their messages. */
const MESSAGE_FIELDS = {
  organizationId: 1,
  chatId: 1,
  sessionId: 1,
  turn: 1,
  'input.message': 1,
  createdAt: 1,
  status: 1,
  result: 1,
  completedAt: 1,
} as const;

const fields = (exec: MessagesSource) => ({
  organizationId: exec.organizationId,
  chatId: exec.chatId,
  sessionId: exec.sessionId,
  executionId: exec._id,
});

/**
 * @param exec an execution.
 * @returns its user message, as the `chat_messages` document recorded before held it.
 */
export function userMessageOf(exec: MessagesSource): ChatMessageDoc {
  return {
    _id: `${exec._id}:user`,
    ...fields(exec),
    role: 'user',
    content: exec.input?.message ?? '',
    position: exec.turn * 2,
    createdAt: exec.createdAt,
    updatedAt: exec.createdAt,
  };
}

/**
 * @param exec an execution.
 * @returns its reply when it completed (the `chat_messages` document recorded before held the same text, a space
 *   for an empty one), else null: only a completed execution has one.
 */
export function assistantMessageOf(exec: MessagesSource): ChatMessageDoc | null {
  if (exec.status !== 'completed') return null;
  const at = exec.completedAt ?? exec.createdAt;
  return {
    _id: `${exec._id}:assistant`,
    ...fields(exec),
    role: 'assistant',
    content: exec.result || ' ',
    position: exec.turn * 2 + 1,
    createdAt: at,
    updatedAt: at,
  };
}

/**
 * One page of a chat's messages in conversation order: the stored ones and the user messages of its executions.
 * @param organizationId the chat's organization.
 * @param chatId the chat.
 * @param after the position after which to start (-1: from the first).
 * @param limit most messages.
 * @param upTo the last position to read (default: no bound).
 * @returns the messages, by position.
 */
export async function messagesPage(
  organizationId: string,
  chatId: string,
  after: number,
  limit: number,
  upTo?: number
): Promise<ChatMessageDoc[]> {
  const bound = (low: number, high: number | undefined): unknown =>
    mongoose.trusted({ $gt: low, ...(high !== undefined ? { $lte: high } : {}) });
  // Each read by its index (`{chatId, position}`, `{chatId, turn}`): the first `limit` of each source hold the first
  // `limit` of both.
  // (A turn holds positions 2·turn and 2·turn + 1: the turn of the position after `after` and on.)
  const [stored, executions] = await Promise.all([
    ChatMessage.find({ chatId, organizationId, position: bound(after, upTo) })
      .sort({ position: 1 })
      .limit(limit)
      .lean<ChatMessageDoc[]>(),
    Execution.find({
      chatId,
      organizationId,
      turn: bound((after - 1) / 2, upTo === undefined ? undefined : upTo / 2),
    })
      .sort({ turn: 1 })
      .limit(limit)
      .select(MESSAGE_FIELDS)
      .lean<MessagesSource[]>(),
  ]);
  // One message per position (a chat's positions are its turns': each holds one message); a stored one wins.
  const byPosition = new Map(stored.map((m) => [m.position, m]));
  const inPage = (p: number): boolean => p > after && (upTo === undefined || p <= upTo);
  for (const e of executions) {
    for (const m of [userMessageOf(e), assistantMessageOf(e)]) {
      if (m && inPage(m.position) && !byPosition.has(m.position)) byPosition.set(m.position, m);
    }
  }
  return [...byPosition.values()].sort((a, b) => a.position - b.position).slice(0, limit);
}

/**
 * One message of a chat by its id.
 * @param organizationId the chat's organization.
 * @param chatId the chat.
 * @param messageId the message's id (`<executionId>:user`, `<executionId>:assistant`, a fork's copy's).
 * @returns the message, or null.
 */
export async function findChatMessage(
  organizationId: string,
  chatId: string,
  messageId: string
): Promise<ChatMessageDoc | null> {
  const stored = await ChatMessage.findOne({ _id: messageId, chatId, organizationId }).lean<ChatMessageDoc>();
  const role = /:(user|assistant)$/.exec(messageId)?.[1];
  if (stored || !role) return stored;
  const exec = await Execution.findOne({ _id: messageId.slice(0, -(role.length + 1)), chatId, organizationId })
    .select(MESSAGE_FIELDS)
    .lean<MessagesSource>();
  if (!exec) return null;
  return role === 'user' ? userMessageOf(exec) : assistantMessageOf(exec);
}

/**
 * The messages of executions, read by id (a session's history: activities/executionReply.ts). The reply is the
 * record's `result` for executions recorded before too (their `chat_messages` document holds the same text).
 * @param ids execution ids (at most a batch: one `$or` of `_id` equalities).
 * @returns each one's user message, and the reply of each completed one, by execution id.
 */
export async function turnMessagesOf(
  ids: string[]
): Promise<{ users: Map<string, string>; replies: Map<string, string> }> {
  const users = new Map<string, string>();
  const replies = new Map<string, string>();
  if (ids.length === 0) return { users, replies };
  const docs = await Execution.collection
    .find<{ _id: string; input?: { message?: string }; status?: string; result?: string | null }>(
      { $or: ids.map((_id) => ({ _id })) } as never,
      { projection: { 'input.message': 1, status: 1, result: 1 } }
    )
    .toArray();
  for (const d of docs) {
    if (d.input?.message !== undefined) users.set(d._id, d.input.message);
    if (d.status === 'completed') replies.set(d._id, d.result || ' ');
  }
  return { users, replies };
}
