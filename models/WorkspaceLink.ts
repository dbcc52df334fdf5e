/**
 * A public link into a workspace [docs/decisions.md "Shares and apps"]: a file share (`shr_…`, one file) or a
 * workspace app (`app_…`, a static site served from a folder). The clear token is in the public URL only; the
 * record keeps its SHA-256 (`tokenHash`, unique: the public routes look links up by it).
 */
import mongoose, { type InferSchemaType } from 'mongoose';

export const LINK_KINDS = ['share', 'app'] as const;
export type LinkKind = (typeof LINK_KINDS)[number];

const schema = new mongoose.Schema(
  {
    _id: { type: String, required: true },
    kind: { type: String, enum: LINK_KINDS, required: true },
    organizationId: { type: String, required: true },
    spaceId: { type: String, required: true },
    /** The shared file, or the app's folder (`''` = the workspace root), as parsed by parseWorkspacePath. */
    path: { type: String, default: '' },
    /** Shares: the identity of the file shared (lib/fileStorage.ts `FileEntry.id`); another file is not served. */
    fileId: { type: String, default: null },
    /** Apps: a display name. */
    name: { type: String, default: '' },
    tokenHash: { type: String, required: true },
    createdBy: { type: String, required: true },
    /** null: never expires. */
    expiresAt: { type: Date, default: null },
    revokedAt: { type: Date, default: null },
  },
  { timestamps: true, versionKey: false }
);
schema.index({ tokenHash: 1 }, { unique: true });
schema.index({ spaceId: 1, path: 1 });

export type WorkspaceLinkDoc = InferSchemaType<typeof schema> & { _id: string; createdAt: Date; updatedAt: Date };
export const WorkspaceLink = mongoose.model('WorkspaceLink', schema, 'workspace_links');
