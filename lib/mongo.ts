/**
 * MongoDB connection through mongoose. Works with MongoDB 7 and FerretDB 1.24: no multi-document transactions,
 * no change streams without feature detection. Filters are sanitised (`sanitizeFilter`), so a value that looks
 * like an operator (`{"$gt": ""}`) is matched literally, never executed.
 */
import mongoose from 'mongoose';
import { withDeadline } from './deadline';
import { detectExpiryIndexes, ensureExpiryIndexes } from './expiry';
import { activeTracing, traceDatabaseCommands } from './tracing';
import { insertGrouped, setGroupCommit, groupCommitWindow, type GroupCommitWindow } from './groupCommit';

mongoose.set('sanitizeFilter', true);
mongoose.set('strictQuery', true);

/** Default database name when the URI names none. */
export const DEFAULT_DB_NAME = 'agent_service';

/** Default of `timeoutMs` (the configuration's DEPENDENCY_TIMEOUT_MS default). */
const DEFAULT_TIMEOUT_MS = 3000;
/** Default of `groupCommit` (the configuration's GROUP_COMMIT_MS default). */
export const DEFAULT_GROUP_COMMIT: GroupCommitWindow = 'tick';

/**
 * Connects the shared mongoose instance and, unless told not to, builds every registered model's indexes.
 *
 * Outages: commands are never buffered (`bufferCommands: false`; mongoose would otherwise queue them for 10 s while
 * the server is away and then fail with an error of its own); each one goes to the driver, which waits at most
 * `timeoutMs` for a server and then fails with MongoServerSelectionError, answered 503 by the error middleware.
 * The driver reconnects by itself when the server is back.
 * @param uri MongoDB connection string.
 * @param options.dbName database to use when the URI has no path.
 * @param options.timeoutMs longest wait for a server (DEPENDENCY_TIMEOUT_MS).
 * @param options.autoIndex build the collections and indexes (with the TTL indexes) at connection, as development
 *   and tests do (the default); false in production, where `admin migrate` builds them (lib/indexes.ts) and this
 *   only finds out whether the TTL indexes are there (lib/expiry.ts detectExpiryIndexes).
 * @param options.groupCommit when the inserts of {@link insertDocument} are grouped (GROUP_COMMIT_MS; lib/groupCommit.ts).
 * While tracing is on (lib/tracing.ts: install it before connecting), each command is a span of the trace (a grouped
 *   insert's in the trace of the caller that opened its batch).
 * @returns the connection.
 */
export async function connectMongo(
  uri: string,
  options: { dbName?: string; timeoutMs?: number; autoIndex?: boolean; groupCommit?: GroupCommitWindow } = {}
): Promise<mongoose.Connection> {
  const hasDb = /^mongodb(\+srv)?:\/\/[^/]+\/[^/?]+/.test(uri);
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const autoIndex = options.autoIndex ?? true;
  const traced = activeTracing() !== undefined;
  setGroupCommit(options.groupCommit ?? DEFAULT_GROUP_COMMIT);
  await mongoose.connect(uri, {
    dbName: options.dbName ?? (hasDb ? undefined : DEFAULT_DB_NAME),
    bufferCommands: false,
    serverSelectionTimeoutMS: timeoutMs,
    connectTimeoutMS: timeoutMs,
    ...(traced ? { monitorCommands: true } : {}),
    // Only when off: on by default, and a connection reading from secondaries may not turn them on explicitly.
    ...(autoIndex ? {} : { autoIndex: false, autoCreate: false }),
  });
  if (traced) traceDatabaseCommands(mongoose.connection.getClient());
  if (autoIndex) {
    await Promise.all(Object.values(mongoose.connection.models).map((m) => m.init()));
    await ensureExpiryIndexes(); // TTL indexes where the server has them (lib/expiry.ts)
  } else {
    await detectExpiryIndexes();
  }
  return mongoose.connection;
}

/**
 * @param nodeEnv the configuration's NODE_ENV.
 * @returns whether a process builds its indexes when it connects: everywhere but in production
 *   (docs/decisions.md "Indexes in production: admin migrate").
 */
export function autoIndexFor(nodeEnv: string): boolean {
  return nodeEnv !== 'production';
}

/**
 * Checks that the server answers a read, failing after `timeoutMs`.
 * @param timeoutMs deadline.
 */
export async function pingMongo(timeoutMs = 2000): Promise<void> {
  const db = mongoose.connection.db;
  if (!db || mongoose.connection.readyState !== 1) throw new Error('MongoDB is not connected');
  // A point read by `_id`, not the `ping` command: FerretDB answers `ping` by itself, so a ping says nothing about
  // the PostgreSQL that stores its data; a read goes all the way (one index lookup on every server).
  await withDeadline(db.collection('stream_heads').findOne({ _id: 'readyz' as never }), timeoutMs, 'MongoDB read');
}

/** Closes the shared connection. */
export async function disconnectMongo(): Promise<void> {
  await mongoose.disconnect();
}

/**
 * Inserts one document as `Model.create` stores it (cast to the schema, defaults, timestamps, validated) through the
 * driver, without building a mongoose document: on the hot write paths, mongoose documents (change tracking, state
 * machine, a save error made per save) were most of the api's CPU (docs/benchmarks.md). For schemas without
 * middleware (none of ours has any). The insert is grouped with the other inserts into the same collection of this
 * tick (lib/groupCommit.ts): it resolves once the server acknowledged this document, and rejects with its own error.
 * @param model the model.
 * @param fields the document's fields.
 * @returns the stored document, as a plain object.
 */
export async function insertDocument(
  model: mongoose.Model<any>, // eslint-disable-line @typescript-eslint/no-explicit-any
  fields: Record<string, unknown>
): Promise<Record<string, unknown>> {
  const prepared = await preparedInsert(model, fields);
  await prepared.insert();
  return prepared.doc;
}

/**
 * {@link insertDocument} in two steps, for a caller that sends the insert beside other writes: the document as it will
 * be stored (cast, defaults, timestamps, validated: no round trip), then its insert (grouped as insertDocument's).
 * @param model the model.
 * @param fields the document's fields.
 * @returns the document, and its insert.
 */
export async function preparedInsert(
  model: mongoose.Model<any>, // eslint-disable-line @typescript-eslint/no-explicit-any
  fields: Record<string, unknown>
): Promise<{ doc: Record<string, unknown>; insert: () => Promise<void> }> {
  const doc = await documentFor(model, fields);
  return { doc, insert: () => insertGrouped(model.collection, doc) };
}

/**
 * Inserts several documents in one round trip, as {@link insertDocument} does each; a document whose `_id` is
 * already stored (a repeat of the same write) is left as it is, the others are inserted.
 * @param model the model.
 * @param fieldsList the documents' fields.
 */
export async function insertDocumentsOnce(
  model: mongoose.Model<any>, // eslint-disable-line @typescript-eslint/no-explicit-any
  fieldsList: Record<string, unknown>[]
): Promise<void> {
  if (fieldsList.length === 0) return;
  const docs = await Promise.all(fieldsList.map((fields) => documentFor(model, fields)));
  if (groupCommitWindow() !== 'off') {
    // Into the same batch (queued in one go), each document with its own outcome.
    const results = await Promise.allSettled(docs.map((doc) => insertGrouped(model.collection, doc)));
    const failed = results.find(
      (r): r is PromiseRejectedResult => r.status === 'rejected' && !isDuplicateKey(r.reason)
    );
    if (failed) throw failed.reason;
    return;
  }
  try {
    await model.collection.insertMany(docs, { ordered: false });
  } catch (err) {
    const errors = (err as { writeErrors?: { code?: number }[] | { code?: number } }).writeErrors;
    const list = Array.isArray(errors) ? errors : errors ? [errors] : [];
    if (list.length === 0 || list.some((e) => e.code !== 11000)) throw err;
  }
}

/**
 * @param model the model.
 * @param fields a document's fields.
 * @returns the document as `Model.create` would store it: cast, defaults, timestamps, validated, minimized.
 */
async function documentFor(
  model: mongoose.Model<any>, // eslint-disable-line @typescript-eslint/no-explicit-any
  fields: Record<string, unknown>
): Promise<Record<string, unknown>> {
  const doc = model.applyTimestamps(model.applyDefaults(model.castObject(fields))) as Record<string, unknown>;
  await validateCast(model, doc);
  if (model.schema.get('minimize') !== false) minimize(doc);
  return doc;
}

/** A path of a schema whose value is checked before an insert, and how. */
interface PathCheck {
  path: string[];
  /** Its schema type; `doValidateSync` is mongoose's (untyped) synchronous run of the type's validators. */
  type: mongoose.SchemaType & {
    doValidateSync(value: unknown, scope: unknown, options: { path: string }): mongoose.Error.ValidatorError | null;
  };
  /**
   * Its value, when set, is validated by mongoose's own `Model.validate` (a subdocument, an array of subdocuments
   * or of validated elements, a map): rare on the hot paths, and not worth a copy of mongoose's rules here.
   */
  nested: boolean;
}

/** The checks of a schema; `null` when the schema has a validator of its own (always `Model.validate`). */
const checksBySchema = new WeakMap<mongoose.Schema, PathCheck[] | null>();

/** The validators mongoose defines itself (`user defined` is a schema's own, possibly asynchronous, function). */
const BUILT_IN_VALIDATORS = new Set(['required', 'enum', 'min', 'max', 'minlength', 'maxlength', 'regexp']);

function checksOf(schema: mongoose.Schema): PathCheck[] | null {
  let checks = checksBySchema.get(schema);
  if (checks !== undefined) return checks;
  checks = [];
  for (const [path, type] of Object.entries(schema.paths)) {
    const t = type as mongoose.SchemaType & {
      validators: { type?: string }[];
      caster?: { validators?: unknown[]; $isMongooseArray?: boolean; $isSingleNested?: boolean };
      $isSingleNested?: boolean;
      $isMongooseArray?: boolean;
      $isMongooseDocumentArray?: boolean;
      $isSchemaMap?: boolean;
    };
    if (t.validators.some((v) => !BUILT_IN_VALIDATORS.has(v.type ?? ''))) {
      checks = null;
      break;
    }
    const caster = t.$isMongooseArray ? t.caster : undefined;
    const nested =
      t.$isSingleNested === true ||
      t.$isMongooseDocumentArray === true ||
      t.$isSchemaMap === true ||
      (caster !== undefined &&
        ((caster.validators?.length ?? 0) > 0 || caster.$isMongooseArray === true || caster.$isSingleNested === true));
    if (nested || t.validators.length > 0) checks.push({ path: path.split('.'), type: t as PathCheck['type'], nested });
  }
  checksBySchema.set(schema, checks);
  return checks;
}

/**
 * Validates a document that `castObject` already cast, as `Model.validate` does (the same validators, the same
 * ValidationError), without casting it a second time and without a validation call for every path and every array
 * element that has no validator: `Model.validate` was most of what an insert cost the api (docs/benchmarks.md
 * "Creating an agent: validation and ids"). A document that sets a subdocument, a map or an array of validated
 * elements, and a schema with a validator of its own, go through `Model.validate`.
 * @param model the model.
 * @param doc the cast document, with its defaults.
 * @throws mongoose's ValidationError naming every path that failed.
 */
function validateCast(
  model: mongoose.Model<any>, // eslint-disable-line @typescript-eslint/no-explicit-any
  doc: Record<string, unknown>
): void | Promise<unknown> {
  const checks = checksOf(model.schema);
  if (checks === null) return model.validate(doc);
  let error: mongoose.Error.ValidationError | undefined;
  for (const check of checks) {
    let value: unknown = doc;
    for (const key of check.path) value = (value as Record<string, unknown> | null | undefined)?.[key];
    if (check.nested && value != null && !(Array.isArray(value) && value.length === 0)) return model.validate(doc);
    const path = check.path.join('.');
    const err = check.type.doValidateSync(value, doc, { path });
    if (err) (error ??= new mongoose.Error.ValidationError()).addError(path, err);
  }
  if (error) throw error;
}

/** Removes empty objects, nested ones included, as mongoose's `minimize` does when it saves a document. */
function minimize(obj: Record<string, unknown>): void {
  for (const [key, value] of Object.entries(obj)) {
    if (value === null || typeof value !== 'object' || Object.getPrototypeOf(value) !== Object.prototype) continue;
    minimize(value as Record<string, unknown>);
    if (Object.keys(value).length === 0) delete obj[key];
  }
}

/**
 * @param err an error from the driver.
 * @returns whether it is a unique-index violation (E11000): the document exists already, also the loser of two
 * concurrent upserts of the same key (MongoDB and FerretDB both answer one of them so).
 */
export function isDuplicateKey(err: unknown): boolean {
  return typeof err === 'object' && err !== null && (err as { code?: unknown }).code === 11000;
}
