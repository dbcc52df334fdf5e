/**
 * The claim of one turn of a session: `_id` = `<sessionId>:<turn>`, inserted before the session is marked busy.
 * An insert of a unique `_id` is the only exclusive operation on both servers (FerretDB applies conditional updates
 * in Go without a lock: docs/query-shapes.md), so of two messages sent to an idle session at once exactly one
 * claims the next turn; the other is refused with 409 like any message to a busy session.
 */
import mongoose, { type InferSchemaType } from 'mongoose';

const schema = new mongoose.Schema(
  {
    _id: { type: String, required: true },
    organizationId: { type: String, required: true },
    executionId: { type: String, required: true },
  },
  { timestamps: { createdAt: true, updatedAt: false }, versionKey: false }
);

export type SessionTurnDoc = InferSchemaType<typeof schema> & { _id: string; createdAt: Date };
export const SessionTurn = mongoose.model('SessionTurn', schema, 'session_turns');
