/**
 * Reads of a chat's messages (issue 37 lever 3). An execution's user message is its record's `input.message`: the api
 * no longer writes it as a `chat_messages` document (one write fewer per execution). `chat_messages` keeps the
 * assistant replies, the user messages of executions recorded before, and the copies a fork makes; a read takes both
 * and, at a position that has both (an execution recorded before), the stored document.
 */
import mongoose from 'mongoose';
import { ChatMessage, Execution, type ChatMessageDoc, type ExecutionDoc } from '../models';

/** The fields of an execution its user message is made of. */
type UserMessageSource = Pick<
  ExecutionDoc,
  '_id' | 'organizationId' | 'chatId' | 'sessionId' | 'turn' | 'input' | 'createdAt'
>;

/** What a read of executions needs for their user messages. */
const USER_MESSAGE_FIELDS = {
  organizationId: 1,
  chatId: 1,
  sessionId: 1,
  turn: 1,
  'input.message': 1,
  createdAt: 1,
} as const;

/**
 * @param exec an execution.
 * @returns its user message, as the `chat_messages` document recorded before held it.
 */
export function userMessageOf(exec: UserMessageSource): ChatMessageDoc {
  return {
    _id: `${exec._id}:user`,
    organizationId: exec.organizationId,
    chatId: exec.chatId,
    sessionId: exec.sessionId,
    executionId: exec._id,
    role: 'user',
    content: exec.input?.message ?? '',
    position: exec.turn * 2,
    createdAt: exec.createdAt,
    updatedAt: exec.createdAt,
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
  const [stored, executions] = await Promise.all([
    ChatMessage.find({ chatId, organizationId, position: bound(after, upTo) })
      .sort({ position: 1 })
      .limit(limit)
      .lean<ChatMessageDoc[]>(),
    Execution.find({
      chatId,
      organizationId,
      turn: bound(after / 2, upTo === undefined ? undefined : upTo / 2),
    })
      .sort({ turn: 1 })
      .limit(limit)
      .select(USER_MESSAGE_FIELDS)
      .lean<UserMessageSource[]>(),
  ]);
  // One message per position (a chat's positions are its turns': each holds one message); a stored one wins.
  const byPosition = new Map(stored.map((m) => [m.position, m]));
  for (const e of executions) {
    const m = userMessageOf(e);
    if (!byPosition.has(m.position)) byPosition.set(m.position, m);
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
  if (stored || !messageId.endsWith(':user')) return stored;
  const exec = await Execution.findOne({ _id: messageId.slice(0, -':user'.length), chatId, organizationId })
    .select(USER_MESSAGE_FIELDS)
    .lean<UserMessageSource>();
  return exec ? userMessageOf(exec) : null;
}

/**
 * The user messages of executions, read by id (a session's history: activities/executionReply.ts).
 * @param ids execution ids (at most a batch: one `$or` of `_id` equalities).
 * @returns each one's message content, by execution id.
 */
export async function userMessagesOf(ids: string[]): Promise<Map<string, string>> {
  if (ids.length === 0) return new Map();
  const docs = await Execution.collection
    .find<{ _id: string; input?: { message?: string } }>({ $or: ids.map((_id) => ({ _id })) } as never, {
      projection: { 'input.message': 1 },
    })
    .toArray();
  return new Map(docs.flatMap((d) => (d.input?.message !== undefined ? [[d._id, d.input.message]] : [])));
}
