/** A chat (conversation) with an agent inside a space. */
import mongoose, { type InferSchemaType } from 'mongoose';
import { newId } from '../lib/ids';

export const CHAT_STATUSES = ['standby', 'working', 'done', 'needs_attention', 'error'] as const;

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
    closed: { type: Boolean, default: false },
    closedAt: { type: Date, default: null },
  },
  { timestamps: true, versionKey: false }
);
schema.index({ organizationId: 1, spaceId: 1, createdAt: -1 });

export type ChatDoc = InferSchemaType<typeof schema> & { _id: string; createdAt: Date; updatedAt: Date };
export const Chat = mongoose.model('Chat', schema, 'chats');
