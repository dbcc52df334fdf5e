/**
 * A chat (conversation) with an agent inside a space. The same record serves the v1 executions (a chat per
 * conversation) and the current surface's durable chats (/api/chats). Its status follows its executions
 * [docs/decisions.md "Chats"]: `standby` (nothing ran yet, or the last reply was cancelled) → `working` (an
 * execution runs) → `done` (completed) | `error` (failed); `needs_attention` when a job iteration in the chat asks
 * for a review or for input (activities/chatStream.ts `chatStatusAfter`, over {@link chatStatusOf}, which maps an
 * execution's status).
 */
import mongoose, { type InferSchemaType } from 'mongoose';
import { newId } from '../lib/ids';
import type { ExecutionStatus } from './Execution';

export const CHAT_STATUSES = ['standby', 'working', 'done', 'needs_attention', 'error'] as const;
export type ChatStatus = (typeof CHAT_STATUSES)[number];

/**
 * @param status an execution's status.
 * @returns the status its chat shows while (or after) it is the chat's latest execution.
 */
export function chatStatusOf(status: ExecutionStatus): ChatStatus {
  switch (status) {
    case 'pending':
    case 'queued':
    case 'running':
      return 'working';
    case 'completed':
      return 'done';
    case 'failed':
      return 'error';
    case 'cancelled':
      return 'standby';
  }
}

const schema = new mongoose.Schema(
  {
    _id: { type: String, default: () => newId('chat') },
    organizationId: { type: String, required: true },
    spaceId: { type: String, required: true },
    agentId: { type: String, default: null },
    ownerId: { type: String, required: true },
    title: { type: String, default: 'New chat' },
    subtitle: { type: String, default: null },
    lastMessage: { type: String, default: null },
    sessionId: { type: String, default: null },
    status: { type: String, enum: CHAT_STATUSES, default: 'standby' },
    /** Chat option (PATCH /api/chats/{id}/options): the model of its next executions instead of the agent's. */
    model: { type: String, default: null },
    /**
     * A fork's origin (POST /api/chats/{id}/fork, or a rerun's conversation): the chat and the message it was forked
     * after (its messages up to that one were copied) and, for a rerun, the execution rerun. Null otherwise.
     */
    forkedFrom: {
      type: new mongoose.Schema({ chatId: String, messageId: String, executionId: String }, { _id: false }),
      default: null,
    },
    /*
     * The state of the chat's session (docs/decisions.md "The session on the chat", issue 37): written by the chat's
     * insert and by the writes that take and free its turn. Absent on chats recorded before, and on a chat that has
     * had no execution yet without a session, whose state is (or will be) a `sessions` document (models/Session.ts):
     * commands/conversations.ts reads both. `turns` present: the state is here.
     */
    /** The execution running in the session (one at a time), null when it is free. */
    activeExecutionId: { type: String, default: null },
    /** Number of turns started (the next execution's turn is turns + 1). */
    turns: { type: Number, default: undefined },
    /** Completed executions in order: their messages are the model's history. */
    history: { type: [String], default: undefined },
    /**
     * Last seq of the chat's event stream that the session's finished executions occupy (models/Session.ts
     * `chatStreamSeq`): written with the release of `activeExecutionId`.
     */
    chatStreamSeq: { type: Number, default: undefined },
    closed: { type: Boolean, default: false },
    closedAt: { type: Date, default: null },
  },
  { timestamps: true, versionKey: false }
);
// A space's chats, counted (commands/spaces.ts `chatCount`): the space bounds the count. It replaced
// `{organizationId, spaceId, createdAt}`, whose order no query used (lib/indexes.ts RETIRED_INDEXES drops it).
schema.index({ spaceId: 1 });
// GET /api/chats: the organization's open chats, optionally by status or agent (docs/query-shapes.md).
schema.index({ organizationId: 1, closed: 1, createdAt: -1, _id: -1 });
schema.index({ organizationId: 1, status: 1, createdAt: -1, _id: -1 });
schema.index({ organizationId: 1, agentId: 1, createdAt: -1, _id: -1 });

export type ChatDoc = InferSchemaType<typeof schema> & { _id: string; createdAt: Date; updatedAt: Date };
export const Chat = mongoose.model('Chat', schema, 'chats');

/**
 * @param chatId the chat.
 * @returns the id of its durable event stream (commands/eventLog.ts), written by activities/chatStream.ts.
 */
export const chatStreamId = (chatId: string): string => `chat:${chatId}`;
