/**
 * Records that expire (idempotency records, rate-limit windows, OAuth grants; and, after their retention, stream
 * events, the webhook delivery log and service events): docs/decisions.md "Expiring records" and "Retention".
 *
 * Each carries `expiresAt` and `expiryBucket` (the hour its expiry falls in). On MongoDB a TTL index on
 * `expiresAt` removes them. FerretDB 1.24 refuses TTL indexes ("Index option expireAfterSeconds is not implemented
 * yet"), and a range delete (`expiresAt < now`) is not pushed down to PostgreSQL there, so on such a server the api
 * sweeps instead: every bucket whose hour has passed is deleted by equality on `expiryBucket` (an index-served
 * delete on both servers), at most once per SWEEP_INTERVAL_MS per process, remembering the last bucket swept in
 * `expiry_sweeps` (one document per collection) so a restart neither misses nor repeats buckets. Readers never
 * trust a record past its `expiresAt`; the sweep only reclaims space.
 *
 * Here: the fields and index of an expiring record, the registry of expiring models, the retention, and the TTL
 * indexes. The sweep, which reads and writes the `expiry_sweeps` model, is commands/expirySweeps.ts.
 */
import type { Model, Schema } from 'mongoose';
import type { Retention } from './config';

/** Width of an expiry bucket. */
export const EXPIRY_BUCKET_MS = 60 * 60 * 1000;

/** Schema paths every expiring record has. */
export const expiryPaths = {
  expiresAt: { type: Date, required: true },
  expiryBucket: { type: Number, required: true },
} as const;

/**
 * @param expiresAt when the record expires.
 * @returns the fields to store with the record.
 */
export function expiryFields(expiresAt: Date): { expiresAt: Date; expiryBucket: number } {
  return { expiresAt, expiryBucket: Math.floor(expiresAt.getTime() / EXPIRY_BUCKET_MS) };
}

/** Until a process configures it (createApp, createActivities): the documented defaults, 30 days each. */
const DEFAULT_RETENTION: Retention = { streamEventsMs: 30 * 86_400_000, deliveryLogMs: 30 * 86_400_000 };
let retention: Retention = DEFAULT_RETENTION;

/**
 * Sets this process's retention (STREAM_EVENT_RETENTION, DELIVERY_LOG_RETENTION): every writer of what it covers
 * stamps its documents through {@link retentionExpiry}, so the setting lives in one place.
 * @param configured the configuration's retention.
 */
export function configureRetention(configured: Retention): void {
  retention = configured;
}

/**
 * @param kind what is written: stream events, or the delivery log (deliveries and service events).
 * @param writtenAt when it is written.
 * @returns the expiry fields to store with it: its retention after it was written.
 */
export function retentionExpiry(
  kind: keyof Retention,
  writtenAt: Date = new Date()
): { expiresAt: Date; expiryBucket: number } {
  return expiryFields(new Date(writtenAt.getTime() + retention[kind]));
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type AnyModel = Model<any>;

const expiring: AnyModel[] = [];
let ttlSupported: boolean | undefined;

/**
 * Declares a schema's records as expiring: adds the bucket index (the TTL index is made by ensureExpiryIndexes,
 * which knows whether the server supports it).
 * @param schema the schema (with expiryPaths).
 */
export function expiringSchema(schema: Schema): void {
  schema.index({ expiryBucket: 1 });
}

/**
 * Registers a model whose schema went through expiringSchema.
 * @param model the model.
 * @returns the model.
 */
export function registerExpiring<M extends AnyModel>(model: M): M {
  expiring.push(model);
  return model;
}

/**
 * Creates the TTL index of every expiring collection where the server supports it (MongoDB); on a server that
 * refuses TTL indexes (FerretDB 1.24) remembers that the api must sweep.
 * @returns whether the server honours TTL indexes.
 */
export async function ensureExpiryIndexes(): Promise<boolean> {
  let supported = true;
  for (const model of expiring) {
    try {
      await model.collection.createIndex({ expiresAt: 1 }, { expireAfterSeconds: 0, name: 'expiresAt_ttl' });
    } catch (err) {
      const e = err as { code?: number; message?: string };
      if (e.code !== 238 && !/not implemented/i.test(String(e.message))) throw err;
      supported = false;
    }
  }
  ttlSupported = supported;
  return supported;
}

/**
 * @returns the collections of the expiring models whose TTL index the database does not hold (a missing collection
 *   holds none).
 */
export async function missingExpiryIndexes(): Promise<string[]> {
  const missing = await Promise.all(
    expiring.map(async (model) => {
      const indexes = await model.collection
        .listIndexes()
        .toArray()
        .catch((err: { code?: number }) => {
          if (err.code === 26) return []; // NamespaceNotFound
          throw err;
        });
      const ttl = indexes.some((i) => i.key?.expiresAt === 1 && typeof i.expireAfterSeconds === 'number');
      return ttl ? [] : [model.collection.collectionName];
    })
  );
  return missing.flat();
}

/**
 * Where indexes are not built at start (production: `admin migrate` made them), finds out whether the TTL indexes
 * are there: when every one is, the server removes expired records; otherwise (FerretDB, or a database not
 * migrated yet) the api sweeps them (commands/expirySweeps.ts), so records still expire.
 * @returns whether the server removes expired records by itself.
 */
export async function detectExpiryIndexes(): Promise<boolean> {
  ttlSupported = (await missingExpiryIndexes()).length === 0;
  return ttlSupported;
}

/** @returns the models registered as expiring (each through {@link registerExpiring}). */
export function expiringModels(): readonly AnyModel[] {
  return expiring;
}

/**
 * @returns whether the server honours TTL indexes, as {@link ensureExpiryIndexes} found out (undefined before it
 *   ran): where it does not, the api sweeps (commands/expirySweeps.ts).
 */
export function ttlIndexesSupported(): boolean | undefined {
  return ttlSupported;
}
