/**
 * A claim on part of a workspace's size cap, taken before bytes are written into the workspace and closed when the
 * write ends (commands/workspaceQuota.ts) [docs/decisions.md "Workspace caps under concurrency"].
 *
 * `_id` = `<spaceId>:<seq>`: reservations of a workspace are numbered, each taking the next number by **inserting**
 * its `_id` (the only exclusive operation on both servers), so they are totally ordered and a reservation checks
 * itself against every open one numbered before it. Numbers are never reused while a later one exists: closed
 * reservations stay (an expiring record) so the highest number is always known.
 */
import mongoose, { type InferSchemaType } from 'mongoose';
import { expiringSchema, expiryPaths, registerExpiring } from '../lib/expiry';

const schema = new mongoose.Schema(
  {
    _id: { type: String, required: true },
    organizationId: { type: String, required: true },
    spaceId: { type: String, required: true },
    seq: { type: Number, required: true },
    /** Bytes held while open. */
    bytes: { type: Number, required: true },
    /** Open: its bytes count against the cap until `heldUntil`; closed once the write ended (either way). */
    open: { type: Boolean, required: true },
    /** The lease: renewed while the write runs; past it, nobody counts the reservation (its process died). */
    heldUntil: { type: Date, required: true },
    ...expiryPaths,
  },
  { timestamps: { createdAt: true, updatedAt: false }, versionKey: false }
);
// The highest number (sort seq desc, limit 1) and the open reservations in order (sort seq, limit): both served in
// order on both servers (docs/query-shapes.md).
schema.index({ spaceId: 1, seq: 1 });
schema.index({ spaceId: 1, open: 1, seq: 1 });
expiringSchema(schema);

export type WorkspaceReservationDoc = InferSchemaType<typeof schema> & { _id: string; createdAt: Date };
export const WorkspaceReservation = registerExpiring(
  mongoose.model('WorkspaceReservation', schema, 'workspace_reservations')
);
