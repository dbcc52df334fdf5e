/**
 * The hot path's updates and point reads through the driver (`Model.collection`), without mongoose's Query layer
 * (casting, middleware, the stack capture: about 40 % more client CPU per operation, docs/benchmarks.md "What
 * mongoose's query layer costs per operation"; issue 37 lever 4). For writes whose values are already of the schema's
 * types (ids, numbers, dates, strings of the schema's enums) and whose paths the schema declares: nothing is cast,
 * validated or stripped, so a caller names only such paths. Timestamps are kept as mongoose keeps them. Filters are
 * built by the callers from stored ids and typed values only (mongoose's `sanitizeFilter` does not run here).
 * Inserts are lib/mongo.ts `insertDocument`'s.
 */
import type mongoose from 'mongoose';

type AnyModel = mongoose.Model<any>; // eslint-disable-line @typescript-eslint/no-explicit-any

/** The update operators the hot path uses. */
export interface DirectUpdate {
  $set?: Record<string, unknown>;
  $setOnInsert?: Record<string, unknown>;
  $addToSet?: Record<string, unknown>;
  $max?: Record<string, unknown>;
  $inc?: Record<string, unknown>;
  /** Paths removed (the value is ignored, as the server does). */
  $unset?: Record<string, ''>;
}

/**
 * @param model the model.
 * @returns the names of its timestamp paths (none when the schema keeps no timestamps).
 */
function timestampPaths(model: AnyModel): { createdAt?: string; updatedAt?: string } {
  const option = model.schema.get('timestamps') as
    boolean | { createdAt?: boolean | string; updatedAt?: boolean | string } | undefined;
  if (!option) return {};
  if (option === true) return { createdAt: 'createdAt', updatedAt: 'updatedAt' };
  const name = (v: boolean | string | undefined, dflt: string): string | undefined =>
    v === false ? undefined : typeof v === 'string' ? v : v === true ? dflt : dflt;
  return { createdAt: name(option.createdAt, 'createdAt'), updatedAt: name(option.updatedAt, 'updatedAt') };
}

/**
 * The update with the schema's timestamps and defaults, as mongoose writes them: `updatedAt` set by every update; on
 * the insert of an upsert, `createdAt` and the defaults of the top-level paths the update does not touch
 * (mongoose's `setDefaultsOnInsert`).
 */
function stamped(model: AnyModel, update: DirectUpdate, upsert: boolean): DirectUpdate {
  const { createdAt, updatedAt } = timestampPaths(model);
  const now = new Date();
  const out: DirectUpdate = { ...update };
  if (updatedAt && !(update.$set && updatedAt in update.$set)) out.$set = { ...update.$set, [updatedAt]: now };
  if (upsert) {
    const touched = new Set(
      Object.values(out).flatMap((fields) => Object.keys(fields ?? {}).map((path) => path.split('.')[0]))
    );
    const onInsert: Record<string, unknown> = {};
    const defaults = model.applyDefaults({}) as Record<string, unknown>;
    for (const [path, value] of Object.entries(defaults)) if (!touched.has(path)) onInsert[path] = value;
    if (createdAt && !touched.has(createdAt)) onInsert[createdAt] = now;
    if (Object.keys(onInsert).length > 0) out.$setOnInsert = { ...update.$setOnInsert, ...onInsert };
  }
  return out;
}

/**
 * One document's update through the driver.
 * @param model the model.
 * @param filter equality on stored ids and typed values.
 * @param update the update.
 * @param options `upsert`.
 * @returns how many matched, and whether one was inserted.
 */
export async function updateOneDirect(
  model: AnyModel,
  filter: Record<string, unknown>,
  update: DirectUpdate,
  options: { upsert?: boolean } = {}
): Promise<{ matchedCount: number; upsertedCount: number }> {
  const upsert = options.upsert === true;
  const res = await model.collection.updateOne(filter as never, stamped(model, update, upsert) as never, { upsert });
  return { matchedCount: res.matchedCount, upsertedCount: res.upsertedCount };
}

/**
 * One document's update through the driver, answering the document as it is after it (or, asked, as it was before:
 * what a conditional claim matched, e.g. commands/executionClaim.ts).
 * @param model the model.
 * @param filter equality on stored ids and typed values.
 * @param update the update.
 * @param options `returnDocument`: `after` (default) or `before`.
 * @returns the updated document (after or before the update), or null when none matched.
 */
export async function findOneAndUpdateDirect<T>(
  model: AnyModel,
  filter: Record<string, unknown>,
  update: DirectUpdate,
  options: { returnDocument?: 'before' | 'after' } = {}
): Promise<T | null> {
  const doc = (await model.collection.findOneAndUpdate(filter as never, stamped(model, update, false) as never, {
    returnDocument: options.returnDocument ?? 'after',
  })) as unknown;
  return (doc ?? null) as T | null;
}

/**
 * One document read whole (or the given paths of it) by its `_id`, through the driver: what `findById().lean()` reads.
 * @param model the model.
 * @param id the `_id`.
 * @param projection the paths to read (default: all).
 * @returns the stored document, or null.
 */
export async function findByIdDirect<T>(
  model: AnyModel,
  id: string,
  projection?: Record<string, 1>
): Promise<T | null> {
  const doc = (await model.collection.findOne({ _id: id } as never, projection ? { projection } : {})) as unknown;
  return (doc ?? null) as T | null;
}
