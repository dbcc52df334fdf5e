/**
 * Group commit of inserts (issue 37, lever 2): the documents inserted into one collection within one event-loop tick
 * (or a window of a few milliseconds) go to the server as one `insertMany` (`ordered: false`), and each caller's
 * promise settles once that batch is acknowledged. On FerretDB one insert command is one PostgreSQL transaction (up
 * to its batch size of 100 documents), so a batch of n documents costs one commit and one WAL flush instead of n,
 * and the service process writes one command instead of n. While a batch of a collection is in flight, the next one
 * waits for its answer and takes everything queued meanwhile (batches grow with the load), but never longer than
 * {@link GROUP_COMMIT_HOLD_MS}.
 *
 * Every caller learns the fate of its own document and only that: a document the server refused (a duplicate key)
 * rejects its caller with a MongoServerError of the same code and message as `insertOne` would have thrown; the
 * others are acknowledged. When the batch as a whole fails (the server lost mid-batch, a write-concern error, an
 * answer that does not account for every document), every caller of the batch is rejected with the driver's error:
 * a caller is never told its document is stored unless the server acknowledged it.
 */
import { isNativeError } from 'node:util/types';
import mongoose from 'mongoose';

/**
 * When inserts are grouped: `off` (each insert is its own command), `tick` (the inserts of one event-loop tick:
 * flushed by `setImmediate`, after the I/O callbacks of the current loop iteration), or a window in milliseconds
 * after the first insert of a batch (1 to 10).
 */
export type GroupCommitWindow = 'off' | 'tick' | number;

/** The most documents one batch holds; a batch that reaches it is sent at once. */
export const GROUP_COMMIT_MAX_DOCS = 500;

/**
 * While a batch of a collection is in flight, the next one waits for its answer (and takes everything queued
 * meanwhile), but at most this long: a batch stuck on a hung server never holds later inserts back for longer.
 */
export const GROUP_COMMIT_HOLD_MS = 10;

/** One document waiting for its batch, and its caller's promise. */
interface Pending {
  doc: Record<string, unknown>;
  resolve(): void;
  reject(err: unknown): void;
}

type DriverCollection = mongoose.Collection;

/** The documents waiting for one collection. */
class InsertBatcher {
  private pending: Pending[] = [];
  private scheduled = false;
  /** Batches sent and not answered yet. */
  private inFlight = 0;
  /** Set while a batch waits for the one in flight: sends it anyway after GROUP_COMMIT_HOLD_MS. */
  private holdTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly collection: DriverCollection,
    private readonly window: Exclude<GroupCommitWindow, 'off'>
  ) {}

  insert(doc: Record<string, unknown>): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.pending.push({ doc, resolve, reject });
      if (this.pending.length >= GROUP_COMMIT_MAX_DOCS) this.flush();
      else if (!this.scheduled) {
        this.scheduled = true;
        if (this.window === 'tick') setImmediate(() => this.flush());
        else setTimeout(() => this.flush(), this.window);
      }
    });
  }

  private flush(force = false): void {
    this.scheduled = false; // a timer still set for a batch sent full finds an empty or a younger batch: harmless
    const batch = this.pending;
    if (batch.length === 0) return;
    if (!force && this.inFlight > 0 && batch.length < GROUP_COMMIT_MAX_DOCS) {
      // Wait for the batch in flight (its answer sends this one), but never longer than the hold.
      this.holdTimer ??= setTimeout(() => {
        this.holdTimer = undefined;
        this.flush(true);
      }, GROUP_COMMIT_HOLD_MS);
      return;
    }
    clearTimeout(this.holdTimer);
    this.holdTimer = undefined;
    this.pending = [];
    this.inFlight++;
    void sendBatch(this.collection, batch)
      // Whatever went wrong in settling, no caller waits forever (settling a settled promise does nothing).
      .catch((err: unknown) => batch.forEach((p) => p.reject(err)))
      .finally(() => {
        this.inFlight--;
        if (this.pending.length > 0 && !this.scheduled) this.flush();
      });
  }
}

/**
 * Sends one batch and settles each caller's promise.
 * @param collection the collection.
 * @param batch the documents and their callers.
 */
async function sendBatch(collection: DriverCollection, batch: Pending[]): Promise<void> {
  if (batch.length === 1) {
    // One document: the command it always was.
    const [only] = batch;
    await collection.insertOne(only.doc).then(() => only.resolve(), only.reject);
    return;
  }
  let result: { insertedCount: number };
  try {
    result = await collection.insertMany(
      batch.map((p) => p.doc),
      { ordered: false }
    );
  } catch (err) {
    settleFailedBatch(batch, err);
    return;
  }
  if (result.insertedCount !== batch.length) {
    const err = new Error(`group commit: ${result.insertedCount} of ${batch.length} documents acknowledged`);
    for (const p of batch) p.reject(err);
    return;
  }
  for (const p of batch) p.resolve();
}

/** A write error of a bulk write, as the driver reports it. */
interface WriteErrorLike {
  index: number;
  code: number;
  errmsg?: string;
  errInfo?: Record<string, unknown>;
}

/**
 * Settles the callers of a batch whose insertMany threw: per document when the server answered for each one
 * (write errors of some documents, the others inserted), else every caller with the error.
 * @param batch the documents and their callers.
 * @param err what insertMany threw.
 */
function settleFailedBatch(batch: Pending[], err: unknown): void {
  const bulk = err instanceof mongoose.mongo.MongoBulkWriteError ? err : undefined;
  const raw = bulk?.writeErrors;
  const writeErrors = (Array.isArray(raw) ? raw : raw ? [raw] : []) as unknown as WriteErrorLike[];
  const accounted = bulk !== undefined && bulk.insertedCount + writeErrors.length === batch.length;
  if (!bulk || writeErrors.length === 0 || bulk.result.getWriteConcernError() || !accounted) {
    // The driver wraps an error that was no answer of the server for each document (the connection lost, a command
    // error) in a MongoBulkWriteError and keeps it as `errorResponse`: callers get that one, as insertOne throws it
    // (isNativeError, not instanceof: a socket's error may come from another realm, as under jest).
    const cause = isNativeError(bulk?.errorResponse) && writeErrors.length === 0 ? bulk.errorResponse : err;
    for (const p of batch) p.reject(cause);
    return;
  }
  const failed = new Map(writeErrors.map((we) => [we.index, we]));
  for (const [i, p] of batch.entries()) {
    const we = failed.get(i);
    if (!we) p.resolve();
    else
      p.reject(
        new mongoose.mongo.MongoServerError({
          message: we.errmsg ?? `write error ${we.code}`,
          code: we.code,
          ...(we.errInfo ? { errInfo: we.errInfo } : {}),
        })
      );
  }
}

let window: GroupCommitWindow = 'off';
let batchers = new WeakMap<DriverCollection, InsertBatcher>();

/**
 * Sets when inserts are grouped (lib/mongo.ts connectMongo; GROUP_COMMIT_MS). Batches already waiting keep theirs.
 * @param next the window.
 */
export function setGroupCommit(next: GroupCommitWindow): void {
  window = next;
  batchers = new WeakMap();
}

/** @returns the current window. */
export function groupCommitWindow(): GroupCommitWindow {
  return window;
}

/**
 * Inserts one document, grouped with the other inserts into the same collection of this tick or window.
 * @param collection the model's collection.
 * @param doc the document as it is to be stored (the driver adds an ObjectId `_id` when it has none).
 * @returns once the server acknowledged this document; rejects with this document's own error.
 */
export function insertGrouped(collection: DriverCollection, doc: Record<string, unknown>): Promise<void> {
  if (window === 'off') return collection.insertOne(doc).then(() => undefined);
  let batcher = batchers.get(collection);
  if (!batcher) {
    batcher = new InsertBatcher(collection, window);
    batchers.set(collection, batcher);
  }
  return batcher.insert(doc);
}
