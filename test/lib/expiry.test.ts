import { ensureExpiryIndexes, EXPIRY_BUCKET_MS, expiryFields } from '../../lib/expiry';
import { sweepExpired } from '../../commands/expirySweeps';
import { ExpirySweep, IdempotencyRecord, RateWindow } from '../../models';
import { useTestDatabase } from '../helpers/mongo';

useTestDatabase();

describe('expiring records', () => {
  it('TTL indexes where the server has them; FerretDB refuses them, so the api sweeps', async () => {
    const supported = await ensureExpiryIndexes();
    // The embedded stack (FerretDB 1.24) is the one with a PostgreSQL address; a real mongod honours TTL.
    expect(supported).toBe(!process.env.AAS_TEST_POSTGRES_URL);
    if (supported) {
      const indexes = await RateWindow.collection.indexes();
      expect(indexes.find((i) => i.name === 'expiresAt_ttl')?.expireAfterSeconds).toBe(0);
    }
  });

  it('a sweep deletes the records of every bucket that has passed, bucket by bucket, once', async () => {
    const now = Date.now();
    const at = (ms: number) => expiryFields(new Date(now + ms));
    await RateWindow.create([
      { _id: 'a', count: 1, ...at(-3 * EXPIRY_BUCKET_MS) },
      { _id: 'b', count: 1, ...at(-2 * EXPIRY_BUCKET_MS) },
      { _id: 'c', count: 1, ...at(EXPIRY_BUCKET_MS) },
    ]);
    await IdempotencyRecord.create({
      _id: 'k',
      fingerprint: 'f',
      state: 'done',
      lockedUntil: new Date(now),
      ...at(-2 * EXPIRY_BUCKET_MS),
    });
    expect(await sweepExpired(new Date(now))).toBe(3);
    expect((await RateWindow.find({}).lean()).map((d) => d._id)).toEqual(['c']);
    expect(await IdempotencyRecord.countDocuments({})).toBe(0);
    const state = await ExpirySweep.findById('rate_windows').lean<{ lastBucket: number }>();
    expect(state?.lastBucket).toBe(Math.floor(now / EXPIRY_BUCKET_MS) - 1);
    // the next sweep starts after the last bucket swept
    await RateWindow.create({ _id: 'd', count: 1, ...at(-2 * EXPIRY_BUCKET_MS) });
    expect(await sweepExpired(new Date(now))).toBe(0);
    expect(await sweepExpired(new Date(now + 3 * EXPIRY_BUCKET_MS))).toBe(1); // 'c' once its hour has passed
  });
});
