/**
 * Keyset pagination for every list: newest first by (createdAt, _id), an opaque `cursor` and a `limit`
 * (default 100, max 1000); `nextCursor` is set while more items remain.
 */
import mongoose, { type FilterQuery, type Model } from 'mongoose';
import { ValidationError } from './errors';

export const DEFAULT_LIMIT = 100;
export const MAX_LIMIT = 1000;

/** Query-string schema properties shared by every list endpoint. */
export const pageQueryProperties = {
  limit: { type: 'integer', minimum: 1, maximum: MAX_LIMIT, default: DEFAULT_LIMIT, description: 'Items per page' },
  cursor: { type: 'string', maxLength: 200, description: 'nextCursor of the previous page' },
} as const;

interface CursorDoc {
  _id: string;
  createdAt: Date;
}

function encode(doc: CursorDoc): string {
  return Buffer.from(JSON.stringify([doc.createdAt.getTime(), doc._id])).toString('base64url');
}

function decode(cursor: string): { t: Date; id: string } {
  try {
    const [t, id] = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as [unknown, unknown];
    if (typeof t !== 'number' || !Number.isFinite(t) || typeof id !== 'string') throw new Error('shape');
    return { t: new Date(t), id };
  } catch {
    throw new ValidationError('Invalid cursor');
  }
}

/**
 * @param model the model to list.
 * @param filter the (tenant-scoped) filter.
 * @param page limit and optional cursor.
 * @returns one page of lean documents and the cursor of the next one (null at the end).
 */
export async function paginate<T extends CursorDoc>(
  model: Model<any>, // eslint-disable-line @typescript-eslint/no-explicit-any
  filter: FilterQuery<unknown>,
  page: { limit: number; cursor?: string }
): Promise<{ items: T[]; nextCursor: string | null }> {
  let query = filter;
  if (page.cursor) {
    const { t, id } = decode(page.cursor);
    const after = {
      $or: [{ createdAt: mongoose.trusted({ $lt: t }) }, { createdAt: t, _id: mongoose.trusted({ $lt: id }) }],
    };
    // The filter's own fields stay at the top level: the embedded database pushes down only top-level equality
    // (docs/query-shapes.md), so wrapping the whole filter in `$and` would make every next page a full scan.
    const and = (filter as { $and?: FilterQuery<unknown>[] }).$and ?? [];
    query = { ...filter, $and: [...and, after] };
  }
  const docs = (await model
    .find(query)
    .sort({ createdAt: -1, _id: -1 })
    .limit(page.limit + 1)
    .lean()) as T[];
  const more = docs.length > page.limit;
  const items = more ? docs.slice(0, page.limit) : docs;
  return { items, nextCursor: more ? encode(items[items.length - 1]) : null };
}
