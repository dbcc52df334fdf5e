/**
 * The indexes the models declare, compared with what the database holds (docs/decisions.md "Indexes in production:
 * admin migrate"). In development and tests every process builds them when it connects (mongoose `autoIndex`); in
 * production nothing is built at start: `admin migrate` creates them (dropping only the indexes listed as retired,
 * never another index the schemas do not declare), `admin check` verifies them, and the api and the worker refuse to start without the unique ones.
 * Works on every model registered on the default connection (the caller imports models/).
 */
import mongoose from 'mongoose';
import type { Logger } from './logger';

/** One declared index. */
export interface DeclaredIndex {
  /** The collection's name. */
  collection: string;
  /** `collection.name`, the name MongoDB gives it (`field_1_other_-1`) unless the schema names it. */
  ref: string;
  key: Record<string, unknown>;
  unique: boolean;
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyModel = mongoose.Model<any>;
type IndexSpec = [Record<string, unknown>, Record<string, unknown>];

/**
 * Indexes the models declared once and replaced since: `admin migrate` drops each where the database still holds it
 * (by name), since an index nothing reads still costs every write its entry. Never an index a schema declares.
 */
export const RETIRED_INDEXES: ReadonlyArray<{ collection: string; name: string; replacedBy: string }> = [
  // issue 37 (database bytes): its order served no query; the count by space is bounded by `{spaceId}`.
  { collection: 'chats', name: 'organizationId_1_spaceId_1_createdAt_-1', replacedBy: 'spaceId_1' },
];

/** @returns every model registered on the default connection, by collection name. */
function registeredModels(): AnyModel[] {
  return Object.values(mongoose.connection.models).sort((a, b) =>
    a.collection.collectionName.localeCompare(b.collection.collectionName)
  );
}

/**
 * @param model a model.
 * @param spec one of its schema's indexes.
 * @returns how it is named in reports.
 */
function describe(model: AnyModel, [key, options]: IndexSpec): DeclaredIndex {
  const name =
    typeof options.name === 'string'
      ? options.name
      : Object.entries(key)
          .map(([field, dir]) => `${field}_${String(dir)}`)
          .join('_');
  const collection = model.collection.collectionName;
  return { collection, ref: `${collection}.${name}`, key, unique: options.unique === true };
}

/**
 * @param model a model.
 * @returns its declared indexes the database does not hold (a missing collection holds none); an index of the same
 *   key with other options (unique, partial) counts as missing.
 */
async function missingOf(model: AnyModel): Promise<IndexSpec[]> {
  const { toCreate } = await model.diffIndexes({ indexOptionsToCreate: true });
  return toCreate as unknown as IndexSpec[];
}

/** @returns every declared index, in collection order. */
export function declaredIndexes(): DeclaredIndex[] {
  return registeredModels().flatMap((model) =>
    (model.schema.indexes() as IndexSpec[]).map((spec) => describe(model, spec))
  );
}

/**
 * @param options.uniqueOnly only the unique indexes (what correctness needs).
 * @returns the declared indexes the database does not hold.
 */
export async function missingIndexes(options: { uniqueOnly?: boolean } = {}): Promise<DeclaredIndex[]> {
  const models = registeredModels().filter(
    (model) => !options.uniqueOnly || (model.schema.indexes() as IndexSpec[]).some(([, o]) => o.unique === true)
  );
  const missing = await Promise.all(
    models.map(async (model) => (await missingOf(model)).map((spec) => describe(model, spec)))
  );
  return missing.flat().filter((index) => !options.uniqueOnly || index.unique);
}

/**
 * Creates every declared index the database does not hold, one collection after another (an index build is heavy
 * on a busy server); drops nothing. An index of the same name with other options fails here, saying so: an
 * operator decides what becomes of the old one.
 * @returns the indexes created.
 */
export async function createMissingIndexes(): Promise<DeclaredIndex[]> {
  const created: DeclaredIndex[] = [];
  for (const model of registeredModels()) {
    const toCreate = await missingOf(model);
    if (toCreate.length === 0) continue;
    created.push(...toCreate.map((spec) => describe(model, spec)));
    await model.createIndexes({ toCreate: [...toCreate] } as never); // mongoose empties the list it is given
  }
  return created;
}

/**
 * Drops the {@link RETIRED_INDEXES} the database still holds, after the indexes that replace them exist (the
 * caller creates the missing declared indexes first).
 * @returns the indexes dropped, as `collection.name`.
 */
export async function dropRetiredIndexes(): Promise<string[]> {
  const db = mongoose.connection.db;
  if (!db) throw new Error('MongoDB is not connected');
  const declared = new Set(declaredIndexes().map((i) => i.ref));
  const dropped: string[] = [];
  for (const { collection, name } of RETIRED_INDEXES) {
    if (declared.has(`${collection}.${name}`)) throw new Error(`${collection}.${name} is both declared and retired`);
    const held = await db
      .collection(collection)
      .listIndexes()
      .toArray()
      .catch((err: { code?: number }) => {
        if (err.code === 26) return []; // NamespaceNotFound
        throw err;
      });
    if (!held.some((i) => i.name === name)) continue;
    try {
      await db.collection(collection).dropIndex(name);
    } catch (err) {
      if ((err as { code?: number }).code !== 27) throw err; // IndexNotFound: dropped meanwhile
    }
    dropped.push(`${collection}.${name}`);
  }
  return dropped;
}

/**
 * Creates the collection of every registered model that has none yet (what mongoose's `autoCreate` does at start
 * in development).
 * @returns the collections created.
 */
export async function createMissingCollections(): Promise<string[]> {
  const db = mongoose.connection.db;
  if (!db) throw new Error('MongoDB is not connected');
  const existing = new Set((await db.listCollections({}, { nameOnly: true }).toArray()).map((c) => c.name));
  const created: string[] = [];
  for (const model of registeredModels()) {
    const name = model.collection.collectionName;
    if (existing.has(name)) continue;
    try {
      await db.createCollection(name);
      created.push(name);
    } catch (err) {
      if ((err as { code?: number }).code !== 48) throw err; // NamespaceExists: made meanwhile
    }
  }
  return created;
}

/**
 * What a production process finds at start, where it builds no index (docs/decisions.md "Indexes in production:
 * admin migrate"): without a unique index, two concurrent writes of the same key would both succeed (idempotency and
 * the one-of-a-kind records rely on duplicate-key errors), so the process refuses to start; without another index
 * queries are slower but correct, so it says so and starts.
 * @returns `fatal`: the one line of a process that refuses to start; `warning`: the line of one that starts anyway.
 */
export async function indexesAtStart(): Promise<{ fatal?: string; warning?: string }> {
  const missing = await missingIndexes();
  const unique = missing.filter((i) => i.unique);
  const other = missing.filter((i) => !i.unique);
  const run = 'run `admin migrate` (node dist/scripts/admin.js migrate) against this database';
  return {
    ...(unique.length > 0
      ? {
          fatal:
            `the database lacks the unique indexes ${refs(unique)}, which keep records unique: ${run} first ` +
            '(production processes build no index at start)',
        }
      : {}),
    ...(other.length > 0
      ? { warning: `the database lacks the indexes ${refs(other)} (queries run slower): ${run}` }
      : {}),
  };
}

const refs = (indexes: DeclaredIndex[]): string => indexes.map((i) => i.ref).join(', ');

/**
 * At the start of a production process: logs what {@link indexesAtStart} found and ends the process (exit 1) when
 * it must not start.
 * @param logger the process's logger.
 */
export async function refuseWithoutIndexes(logger: Logger): Promise<void> {
  const found = await indexesAtStart().catch((err: unknown) => ({
    fatal: `cannot read the database's indexes: ${(err as Error).message}`,
    warning: undefined,
  }));
  if (found.warning) logger.warn(found.warning);
  if (found.fatal) {
    logger.fatal(found.fatal);
    logger.flush();
    process.exit(1);
  }
}
