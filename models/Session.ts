/**
 * A session: the conversation state of a chat with an agent. At most one execution runs in a session at a time
 * (`activeExecutionId`), so replies never interleave; a second message meanwhile is refused with 409.
 */
import mongoose, { type InferSchemaType } from 'mongoose';
import { newId } from '../lib/ids';

const schema = new mongoose.Schema(
  {
    _id: { type: String, default: () => newId('ses') },
    organizationId: { type: String, required: true },
    chatId: { type: String, required: true },
    agentId: { type: String, required: true },
    activeExecutionId: { type: String, default: null },
    /** Number of turns started (the next execution's turn is turns + 1). */
    turns: { type: Number, default: 0 },
    /** Completed executions in order: their messages (`<id>:user`, `<id>:assistant`) are the model's history. */
    history: { type: [String], default: [] },
    /**
     * Last seq of the chat's event stream (`chat:<chatId>`) that the session's finished executions occupy: the next
     * execution mirrors its events after it. Written together with the release of `activeExecutionId`, so whoever
     * finds the session free reads where its events start (docs/decisions.md "Chat event stream").
     */
    chatStreamSeq: { type: Number, default: 0 },
  },
  { timestamps: true, versionKey: false }
);
schema.index({ organizationId: 1, chatId: 1 });

export type SessionDoc = InferSchemaType<typeof schema> & { _id: string; createdAt: Date; updatedAt: Date };
export const Session = mongoose.model('Session', schema, 'sessions');
