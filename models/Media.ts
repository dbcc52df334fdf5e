/**
 * A medium (/api/v1/media) [docs/decisions.md "Media"]: a file an organization uploaded for its agents' executions
 * (images, PDFs, text), its type read from its content. The bytes live on disk (lib/mediaStorage.ts); this record
 * holds what the routes and executions need without reading them. Deleting removes the file, then the record.
 */
import mongoose, { type InferSchemaType } from 'mongoose';
import { MEDIA_TYPES } from '../lib/mediaTypes';

const schema = new mongoose.Schema(
  {
    _id: { type: String, required: true },
    organizationId: { type: String, required: true },
    /** Who uploaded it; with the organization's owners and admins, the one who may delete it. */
    ownerId: { type: String, required: true },
    /** The file name the client gave (no directories). */
    name: { type: String, required: true },
    /** Read from the content (lib/mediaTypes.ts), never taken from the client alone. */
    contentType: { type: String, required: true, enum: Object.keys(MEDIA_TYPES) },
    size: { type: Number, required: true },
    /** Hex SHA-256 of the content. */
    sha256: { type: String, required: true },
    /** Images: their pixel size (read from the header). */
    width: { type: Number, default: undefined },
    height: { type: Number, default: undefined },
  },
  { timestamps: { createdAt: true, updatedAt: false }, versionKey: false }
);
// GET /api/v1/media, newest first, and its count (docs/query-shapes.md).
schema.index({ organizationId: 1, createdAt: -1, _id: -1 });

export type MediaDoc = InferSchemaType<typeof schema> & { _id: string; createdAt: Date };
export const Media = mongoose.model('Media', schema, 'media');
