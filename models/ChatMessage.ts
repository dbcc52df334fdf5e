/**
 * A message of a chat. Ids are deterministic (`<executionId>:user`, `<executionId>:assistant`) so that
 * activity retries write the same documents. The history sent to the model is the messages of the executions its
 * session lists as completed (Session.history).
 */
import mongoose, { type InferSchemaType } from 'mongoose';

const schema = new mongoose.Schema(
  {
    _id: { type: String, required: true },
    organizationId: { type: String, required: true },
    chatId: { type: String, required: true },
    sessionId: { type: String, required: true },
    executionId: { type: String, required: true },
    role: { type: String, enum: ['user', 'assistant'], required: true },
    content: { type: String, required: true },
    /** turn * 2 (+1 for the assistant): the order of the conversation. */
    position: { type: Number, required: true },
  },
  { timestamps: true, versionKey: false }
);
schema.index({ organizationId: 1, chatId: 1, position: 1 });
// GET /api/chats/{id}/messages: its leading field bounds the read to one chat on the embedded database too.
schema.index({ chatId: 1, position: 1 });

export type ChatMessageDoc = InferSchemaType<typeof schema> & { _id: string; createdAt: Date; updatedAt: Date };
export const ChatMessage = mongoose.model('ChatMessage', schema, 'chat_messages');
