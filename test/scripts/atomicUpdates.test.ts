/**
 * One document's updates are atomic, as MongoDB makes them, on whichever server the tests run (the embedded
 * FerretDB through tools/ferretdb/atomic-update.patch; docs/decisions.md "Atomic updates on the embedded database").
 * FerretDB 1.x reads a document, applies the update in its own code and writes the whole document back, so two
 * updates of one document at once could lose one another: a token's revocation undone by the write of its
 * last-used time, a counter short, a conditional claim granted twice. Each case sends its updates at once over the
 * driver's pool (several connections, so the server runs them concurrently) and checks that none was lost or doubled.
 */
import mongoose from 'mongoose';
import { useTestDatabase } from '../helpers/mongo';

useTestDatabase();

interface Doc {
  _id: string;
  [field: string]: unknown;
}
const coll = <T extends { _id: string } = Doc>() => mongoose.connection.collection<T>('atomic_updates');
const N = 60;
const times = <T>(n: number, f: (i: number) => Promise<T>): Promise<T[]> =>
  Promise.all(Array.from({ length: n }, (_, i) => f(i)));

// The driver opens connections a few at a time: open the pool's connections first, so that every case's operations
// reach the server at once (on a cold pool they queue behind a handful of connections and rarely overlap).
beforeAll(async () => {
  for (let round = 0; round < 5; round++) await times(N, () => coll().findOne({ _id: 'none' }));
});

it('concurrent $inc of one field: every increment counts', async () => {
  const counters = coll<{ _id: string; n: number }>();
  await counters.insertOne({ _id: 'counter', n: 0 });
  await times(N, () => counters.updateOne({ _id: 'counter' }, { $inc: { n: 1 } }));
  expect((await counters.findOne({ _id: 'counter' }))?.n).toBe(N);
});

it('concurrent upserts of a missing document: one inserts it, the others update it', async () => {
  const counters = coll<{ _id: string; n: number }>();
  const ids = Array.from({ length: 20 }, (_, k) => `upserted-${k}`);
  const results = await times(ids.length * 6, (i) =>
    counters.updateOne({ _id: ids[i % ids.length] }, { $inc: { n: 1 } }, { upsert: true })
  );
  expect(results.filter((r) => r.upsertedCount === 1)).toHaveLength(ids.length);
  const docs = await counters.find({ _id: { $in: ids } }).toArray();
  expect(docs.map((d) => d.n)).toEqual(ids.map(() => 6));
});

it('concurrent $set of different fields: every field is written (a revocation beside a last-used time)', async () => {
  await coll().insertOne({ _id: 'fields', revokedAt: null, lastUsedAt: null });
  const at = new Date();
  await times(N, (i) =>
    coll().updateOne(
      { _id: 'fields' },
      { $set: i === N / 2 ? { revokedAt: at } : i % 2 ? { lastUsedAt: new Date() } : { [`f${i}`]: i } }
    )
  );
  const doc = await coll().findOne({ _id: 'fields' });
  expect(doc?.revokedAt).toEqual(at);
  expect(doc?.lastUsedAt).toBeInstanceOf(Date);
  const written = Array.from({ length: N }, (_, i) => i).filter((i) => i !== N / 2 && i % 2 === 0);
  expect(written.filter((i) => doc?.[`f${i}`] !== i)).toEqual([]);
});

it('a conditional update is granted once: updateOne and findOneAndUpdate claims', async () => {
  await coll().insertMany([
    { _id: 'claim-1', owner: null },
    { _id: 'claim-2', owner: null },
  ]);
  const updates = await times(N, (i) => coll().updateOne({ _id: 'claim-1', owner: null }, { $set: { owner: i } }));
  expect(updates.filter((r) => r.modifiedCount === 1)).toHaveLength(1);
  expect(updates.filter((r) => r.matchedCount === 1)).toHaveLength(1);
  const winner = updates.findIndex((r) => r.modifiedCount === 1);
  expect((await coll().findOne({ _id: 'claim-1' }))?.owner).toBe(winner);

  const found = await times(N, (i) =>
    coll().findOneAndUpdate({ _id: 'claim-2', owner: null }, { $set: { owner: i } }, { returnDocument: 'after' })
  );
  const granted = found.filter((d) => d !== null);
  expect(granted).toHaveLength(1);
  expect((await coll().findOne({ _id: 'claim-2' }))?.owner).toBe(granted[0]!.owner);
});

it('concurrent findOneAndDelete of one document: one call returns it', async () => {
  await coll().insertOne({ _id: 'once', v: 1 });
  const removed = await times(N, () => coll().findOneAndDelete({ _id: 'once' }));
  expect(removed.filter((d) => d !== null)).toHaveLength(1);
});

it('an update that a concurrent write already made matches and does not modify', async () => {
  await coll().insertOne({ _id: 'same', state: 'a' });
  const results = await times(N, () => coll().updateOne({ _id: 'same' }, { $set: { state: 'b' } }));
  expect(results.every((r) => r.matchedCount === 1)).toBe(true);
  expect(results.filter((r) => r.modifiedCount === 1)).toHaveLength(1);
  expect((await coll().findOne({ _id: 'same' }))?.state).toBe('b');
});

it('a conditional delete never removes a document a concurrent update changed to no longer match', async () => {
  const ids = Array.from({ length: N }, (_, k) => `job-${k}`);
  await coll().insertMany(ids.map((_id) => ({ _id, state: 'running' })));
  const outcomes = await Promise.all(
    ids.map(async (_id) => {
      const [updated, deleted] = await Promise.all([
        coll().updateOne({ _id }, { $set: { state: 'done' } }),
        coll().deleteOne({ _id, state: 'running' }),
      ]);
      return { updated: updated.matchedCount === 1, deleted: deleted.deletedCount === 1, _id };
    })
  );
  // One of the two came first: the update (the delete then finds no running job) or the delete.
  expect(outcomes.filter((o) => o.updated === o.deleted)).toEqual([]);
  const kept = (
    await coll()
      .find({ _id: { $in: ids } })
      .toArray()
  ).map((d) => d._id);
  expect(kept.sort()).toEqual(
    outcomes
      .filter((o) => o.updated)
      .map((o) => o._id)
      .sort()
  );
});
