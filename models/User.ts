/** A user. Users reach organizations through Membership documents. */
import mongoose, { type InferSchemaType } from 'mongoose';
import { newId } from '../lib/ids';

const schema = new mongoose.Schema(
  {
    _id: { type: String, default: () => newId('usr') },
    email: { type: String, required: true, lowercase: true, trim: true, maxlength: 320 },
    name: { type: String, maxlength: 200 },
    avatarUrl: { type: String, maxlength: 2000 },
  },
  { timestamps: true, versionKey: false }
);
schema.index({ email: 1 }, { unique: true });

export type UserDoc = InferSchemaType<typeof schema> & { _id: string };
export const User = mongoose.model('User', schema, 'users');
