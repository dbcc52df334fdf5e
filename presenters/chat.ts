/** Chat, chat message and the work linked to a chat → the current surface's JSON (snake_case). */
import type { ChatDoc, ChatMessageDoc, ExecutionDoc } from '../models';
import { iso } from './time';

/**
 * @param chat the stored chat.
 * @returns the public record.
 */
export function presentChat(chat: ChatDoc): Record<string, unknown> {
  return {
    id: chat._id,
    organization_id: chat.organizationId,
    workspace_id: chat.spaceId,
    agent_id: chat.agentId ?? null,
    owner_id: chat.ownerId,
    title: chat.title,
    subtitle: chat.subtitle ?? null,
    last_message: chat.lastMessage ?? null,
    session_id: chat.sessionId ?? null,
    status: chat.status,
    options: { model: chat.model ?? null },
    forked_from: chat.forkedFrom?.chatId
      ? {
          chat_id: chat.forkedFrom.chatId,
          message_id: chat.forkedFrom.messageId ?? '',
          ...(chat.forkedFrom.executionId ? { execution_id: chat.forkedFrom.executionId } : {}),
        }
      : null,
    closed: chat.closed,
    closed_at: iso(chat.closedAt),
    created_at: chat.createdAt.toISOString(),
    updated_at: chat.updatedAt.toISOString(),
  };
}

/**
 * @param m the stored message.
 * @returns the public record.
 */
export function presentChatMessage(
  m: Pick<ChatMessageDoc, '_id' | 'role' | 'content' | 'position' | 'executionId' | 'createdAt'>
): Record<string, unknown> {
  return {
    id: m._id,
    role: m.role,
    content: m.content,
    position: m.position,
    execution_id: m.executionId,
    created_at: m.createdAt.toISOString(),
  };
}

/**
 * @param e an execution of the chat.
 * @returns its line in the chat's work summary.
 */
export function presentChatWork(e: ExecutionDoc): Record<string, unknown> {
  return {
    id: e._id,
    kind: 'execution',
    status: e.status,
    provider: e.provider,
    model: e.model,
    error: e.error?.message ? { message: e.error.message, code: e.error.code ?? 'failed' } : null,
    created_at: e.createdAt.toISOString(),
    completed_at: iso(e.completedAt),
  };
}
