/**
 * The embedded database's sort / limit / comparison / count pushdown (tools/ferretdb/pushdown.patch, docs/query-shapes.md)
 * gives exactly the answers MongoDB's rules give. The oracle is the same server evaluating the same query without
 * any pushdown: an aggregation that starts with `$sort` and `$skip: 0` (FerretDB pushes down a `$match` only among
 * the first two stages, and only a `$natural` sort there), so it filters, sorts, skips, limits and counts in its
 * own Go code, as before the patch.
 * The data mixes types on purpose: strings that differ by case and accents (byte order, not a locale's), numbers
 * of every kind, dates, booleans, null, missing fields, and arrays in the filtered fields (the indexed equality
 * fields too).
 */
import mongoose from 'mongoose';
import { expectFerretDb, itOnFerretDb, useTestDatabase } from '../helpers/mongo';

useTestDatabase();

const coll = () => mongoose.connection.collection<Record<string, unknown>>('pushdown');
const base = Date.UTC(2026, 0, 1);
const scalars: unknown[] = [
  'apple',
  'Apple',
  'éclair',
  'zebra',
  'Zebra',
  'm',
  '',
  'a b',
  1,
  2.5,
  -3,
  10,
  100,
  0,
  7,
  1e6,
  new Date(base),
  new Date(base + 1000),
  new Date(base - 86_400_000),
  true,
  false,
  null,
];
const arrays: unknown[] = [['b', 'y'], [3, 50], ['m'], []];

beforeAll(async () => {
  const docs = Array.from({ length: 400 }, (_, i) => {
    const doc: Record<string, unknown> = {
      _id: `d${String(i).padStart(4, '0')}`,
      // An array now and then in an indexed equality field: `=` on the ordered mirror cannot match it.
      k: i % 3 === 0 ? 'a' : i % 17 === 0 ? ['b', 'a'] : 'b',
      w: i % 5 === 0 ? 'x' : 'y',
      createdAt: new Date(base + Math.floor(i / 4) * 1000),
    };
    if (i % 11 !== 0) doc.s = scalars[i % scalars.length];
    if (i % 13 !== 0) doc.v = i % 7 === 0 ? arrays[i % arrays.length] : scalars[(i * 5) % scalars.length];
    // null, missing, a string, an array holding null: {n: null} matches all but the string.
    if (i % 4 !== 1) doc.n = [null, undefined, 'q', [null, 'q']][i % 4];
    return doc;
  });
  await coll().insertMany(docs);
  await coll().createIndex({ k: 1, createdAt: -1, _id: -1 });
  await coll().createIndex({ n: 1, createdAt: -1, _id: -1 });
});

interface Case {
  filter: Record<string, unknown>;
  sort: Record<string, 1 | -1>;
  limit: number;
  skip?: number;
}

const cursorDate = new Date(base + 40_000);
const cases: Case[] = [
  { filter: { k: 'a' }, sort: { s: 1, _id: 1 }, limit: 10 },
  { filter: { k: 'a' }, sort: { s: -1, _id: -1 }, limit: 50 },
  { filter: { k: 'b' }, sort: { s: 1, _id: -1 }, limit: 7, skip: 3 },
  { filter: {}, sort: { s: 1, _id: 1 }, limit: 400 },
  { filter: { k: 'a', v: { $lt: 'm' } }, sort: { _id: 1 }, limit: 5 },
  { filter: { k: 'a', v: { $gte: 'm' } }, sort: { _id: -1 }, limit: 20 },
  { filter: { v: { $lt: 5 } }, sort: { _id: 1 }, limit: 30 },
  { filter: { v: { $gt: new Date(base) } }, sort: { createdAt: -1, _id: -1 }, limit: 10 },
  { filter: { v: { $lte: 10, $gt: 0 } }, sort: { createdAt: 1, _id: 1 }, limit: 25 },
  { filter: { k: 'b', $or: [{ v: { $gte: 10 } }, { w: 'x' }] }, sort: { createdAt: -1, _id: -1 }, limit: 10 },
  { filter: { $or: [{ v: null }, { w: 'x' }] }, sort: { _id: 1 }, limit: 10 },
  { filter: { k: 'a', v: { $ne: 'm' } }, sort: { s: 1, _id: 1 }, limit: 15 },
  {
    filter: {
      k: 'a',
      $and: [{ $or: [{ createdAt: { $lt: cursorDate } }, { createdAt: cursorDate, _id: { $lt: 'd0162' } }] }],
    },
    sort: { createdAt: -1, _id: -1 },
    limit: 20,
  },
  { filter: { k: 'a', s: { $type: 'string' } }, sort: { s: 1, _id: 1 }, limit: 10 },
  { filter: { k: 'zzz' }, sort: { _id: 1 }, limit: 10 },
  // Served in order by an index's ordered mirror (docs/decisions.md "List pages flat in tenant size"), arrays of
  // the equality fields read apart, in either direction.
  { filter: { k: 'a' }, sort: { createdAt: -1, _id: -1 }, limit: 30 },
  { filter: { k: 'a' }, sort: { createdAt: 1, _id: 1 }, limit: 30, skip: 5 },
  { filter: { k: { $eq: 'b' } }, sort: { createdAt: -1, _id: -1 }, limit: 400 },
  { filter: { n: null }, sort: { createdAt: -1, _id: -1 }, limit: 40 },
  { filter: { n: 'q', k: 'a' }, sort: { createdAt: 1, _id: 1 }, limit: 40 },
];

describe('sort and limit pushdown on the embedded database', () => {
  it.each(cases.map((c) => [JSON.stringify(c), c] as const))('%s', async (_, c) => {
    const found = await coll()
      .find(c.filter)
      .sort(c.sort)
      .skip(c.skip ?? 0)
      .limit(c.limit)
      .toArray();
    const oracle = await coll()
      .aggregate([{ $sort: c.sort }, { $skip: 0 }, { $match: c.filter }, { $skip: c.skip ?? 0 }, { $limit: c.limit }])
      .toArray();
    expect(oracle.length).toBeGreaterThan(c.filter.k === 'zzz' ? -1 : 0);
    expect(found.map((d) => d._id)).toEqual(oracle.map((d) => d._id));
  });

  it.each(cases.map((c) => [JSON.stringify(c.filter), c] as const))('counts %s', async (_, c) => {
    const counted = await coll().countDocuments(c.filter);
    const oracle = await coll()
      .aggregate([{ $sort: { _id: 1 } }, { $skip: 0 }, { $match: c.filter }, { $group: { _id: 1, n: { $sum: 1 } } }])
      .toArray();
    expect(counted).toBe(oracle[0]?.n ?? 0);
  });

  // A real mongod plans its own sorts: skipped there, and failing where the test servers are FerretDB but it is not.
  itOnFerretDb('is used: the server reports the sort and the limit pushed down (FerretDB only)', async () => {
    await expectFerretDb();
    const explained = await mongoose.connection.db!.command({
      explain: { find: 'pushdown', filter: { k: 'a' }, sort: { createdAt: -1, _id: -1 }, limit: 21 },
    });
    expect(explained).toMatchObject({ sortPushdown: true, limitPushdown: true });
  });
});
