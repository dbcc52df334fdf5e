/**
 * The sweep of expired records, where the server has no TTL indexes (FerretDB 1.24; lib/expiry.ts says why and how
 * records expire): every expiry bucket whose hour has passed is deleted from each expiring collection by equality on
 * `expiryBucket`, and the last bucket swept is kept per collection (models/ExpirySweep.ts), so a restart neither
 * misses nor repeats buckets. The api process runs it (api/main.ts).
 */
import { EXPIRY_BUCKET_MS, expiringModels, ttlIndexesSupported } from '../lib/expiry';
import { ExpirySweep } from '../models';

/** A process sweeps at most this often. */
export const SWEEP_INTERVAL_MS = 5 * 60 * 1000;
/** The first sweep of a collection looks back this many buckets. */
const FIRST_SWEEP_BUCKETS = 48;

let lastSweepAt = 0;

/**
 * Deletes every record whose expiry bucket has fully passed, bucket by bucket (index-served on every server).
 * @param now the current time.
 * @returns the number of records deleted.
 */
export async function sweepExpired(now = new Date()): Promise<number> {
  const lastComplete = Math.floor(now.getTime() / EXPIRY_BUCKET_MS) - 1;
  let deleted = 0;
  for (const model of expiringModels()) {
    const name = model.collection.collectionName;
    const state = await ExpirySweep.findById(name).lean<{ lastBucket: number }>();
    const from = state ? state.lastBucket + 1 : lastComplete - FIRST_SWEEP_BUCKETS;
    for (let bucket = from; bucket <= lastComplete; bucket++) {
      deleted += (await model.deleteMany({ expiryBucket: bucket })).deletedCount;
    }
    if (from <= lastComplete)
      await ExpirySweep.updateOne({ _id: name }, { $max: { lastBucket: lastComplete } }, { upsert: true });
  }
  return deleted;
}

/**
 * Sweeps in the background now and every SWEEP_INTERVAL_MS while the process runs (the api process calls it once it
 * is connected), where the server has no TTL indexes. Never throws.
 * @param onError called with a failure (logging).
 * @returns stop.
 */
export function startExpirySweeps(onError: (err: unknown) => void): () => void {
  maybeSweepExpired(onError);
  const timer = setInterval(() => maybeSweepExpired(onError), SWEEP_INTERVAL_MS);
  timer.unref();
  return () => clearInterval(timer);
}

/**
 * Starts a sweep in the background when the server has no TTL indexes and this process has not swept for
 * SWEEP_INTERVAL_MS. Never throws; a failed sweep is retried at the next interval.
 * @param onError called with a failure (logging).
 */
export function maybeSweepExpired(onError: (err: unknown) => void): void {
  if (ttlIndexesSupported() !== false) return;
  const now = Date.now();
  if (now - lastSweepAt < SWEEP_INTERVAL_MS) return;
  lastSweepAt = now;
  sweepExpired(new Date(now)).catch(onError);
}
