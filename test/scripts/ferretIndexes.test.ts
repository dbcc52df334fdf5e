/**
 * The embedded database's own indexes (tools/ferretdb/indexes.patch, docs/decisions.md "Indexes of the embedded
 * database: no duplicates, `_id` from its own index"):
 * - an index created by several clients at once, whose name other collections also use, exists once: FerretDB 1.24
 *   looked the name up database-wide (one collection per name) and made a second PostgreSQL index, written by every
 *   insert, when another collection had an index of that name;
 * - an `_id` equality (alone, or the `$or` of `_id`s the event log reads) is answered from FerretDB's unique `_id_`
 *   btree, and the wrapper keeps no GIN mirror of `_id` (tools/ferretdb/main.go): before, `_id` was compared with
 *   `@>`, which only the GIN mirror could serve.
 * - FerretDB's btree of a non-unique index holds no rows (`WHERE false`: no query of the patched FerretDB reads it);
 *   a unique one keeps them, and pages, equalities and uniqueness still work (docs/decisions.md "FerretDB's btrees
 *   of non-unique indexes hold no rows").
 * PostgreSQL only: skipped on a real mongod, failing where the test servers are FerretDB but it is not.
 */
import mongoose from 'mongoose';
import pg from 'pg';
import { expectFerretDb, itOnFerretDb, useTestDatabase } from '../helpers/mongo';

const { dbName, uri } = useTestDatabase();
const postgresUrl = process.env.AAS_TEST_POSTGRES_URL;
let client: pg.Client | undefined;

beforeAll(async () => {
  if (!postgresUrl) return;
  client = new pg.Client({ connectionString: postgresUrl });
  await client.connect();
});

afterAll(async () => {
  await client?.end();
});

/** @returns the PostgreSQL table of a collection of this file's database. */
async function tableOf(collection: string): Promise<string> {
  const { rows } = await client!.query<{ table: string }>(
    `SELECT _jsonb->>'table' AS table FROM ${pg.escapeIdentifier(dbName)}._ferretdb_database_metadata
      WHERE _jsonb->>'_id' = $1`,
    [collection]
  );
  expect(rows).toHaveLength(1);
  return rows[0].table;
}

/** @returns the definitions of the indexes on a collection's table, the wrapper's mirrors apart or only them. */
async function indexesOf(collection: string, mirrors: boolean): Promise<Array<{ name: string; def: string }>> {
  const { rows } = await client!.query<{ name: string; def: string }>(
    `SELECT indexname AS name, indexdef AS def FROM pg_indexes WHERE schemaname = $1 AND tablename = $2
      ORDER BY indexname`,
    [dbName, await tableOf(collection)]
  );
  return rows.filter((r) => /_aas(gin|ord|arr)$/.test(r.name) === mirrors);
}

describe("the embedded database's indexes", () => {
  itOnFerretDb(
    'an index created by several clients at once exists once, as on other collections',
    async () => {
      await expectFerretDb();
      expect(postgresUrl).toBeTruthy();
      // Other collections hold an index of the same name (`k_1`), as `organizationId_1_createdAt_-1__id_-1` is on many.
      for (let i = 0; i < 4; i++) await mongoose.connection.collection(`other${i}`).createIndex({ k: 1 });
      await mongoose.connection.collection('target').insertOne({ _id: 'x', k: 1 } as never);
      await mongoose.connection.collection('blocker').insertOne({ _id: 'x', b: 1 } as never);
      // Separate clients (the api and worker processes at start), each creating the same index at once. To make "at
      // once" certain, FerretDB's registry is held by another index creation, stuck on a PostgreSQL lock this test holds:
      // the clients' requests all read the target's indexes (none yet) when it ends, then create it one after another.
      const clients = await Promise.all(
        Array.from({ length: 6 }, () => mongoose.createConnection(uri, { maxPoolSize: 1 }).asPromise())
      );
      const locker = new pg.Client({ connectionString: postgresUrl });
      await locker.connect();
      try {
        await locker.query('BEGIN');
        await locker.query(
          `LOCK TABLE ${pg.escapeIdentifier(dbName)}.${pg.escapeIdentifier(await tableOf('blocker'))} IN ACCESS EXCLUSIVE MODE`
        );
        const blocked = mongoose.connection.collection('blocker').createIndex({ b: 1 });
        await new Promise((r) => setTimeout(r, 500));
        const creates = clients.map((c) => c.collection('target').createIndex({ k: 1 }));
        await new Promise((r) => setTimeout(r, 500));
        await locker.query('COMMIT');
        await Promise.all([blocked, ...creates]);
        for (const name of ['target', 'other0']) {
          const btrees = (await indexesOf(name, false)).filter((r) => r.def.includes(`(_jsonb -> 'k'::text)`));
          expect({ name, btrees: btrees.length }).toEqual({ name, btrees: 1 });
          const listed = await mongoose.connection.collection(name).listIndexes().toArray();
          expect(listed.map((l) => l.name).sort()).toEqual(['_id_', 'k_1']);
        }
      } finally {
        await locker.end();
        await Promise.all(clients.map((c) => c.close()));
      }
    },
    60_000
  );

  itOnFerretDb(
    'an `_id` equality is read from the `_id_` index; `_id` has no GIN mirror',
    async () => {
      await expectFerretDb();
      expect(postgresUrl).toBeTruthy();
      const coll = mongoose.connection.collection<{ _id: string; k: number }>('byid');
      for (let b = 0; b < 5; b++) {
        await coll.insertMany(Array.from({ length: 1000 }, (_, i) => ({ _id: `doc-${b * 1000 + i}`, k: i % 10 })));
      }
      await coll.createIndex({ k: 1 });
      await client!.query(`ANALYZE ${pg.escapeIdentifier(dbName)}.${pg.escapeIdentifier(await tableOf('byid'))}`);
      // The wrapper mirrors an index within a second (tools/ferretdb/main.go): `k`'s GIN mirror shows it has passed.
      const deadline = Date.now() + 15_000;
      while ((await indexesOf('byid', true)).length === 0 && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 200));
      }
      await new Promise((r) => setTimeout(r, 1500)); // one more pass of the mirror loop
      const mirrors = await indexesOf('byid', true);
      expect(mirrors.map((m) => m.def).join('\n')).toContain(`'k'::text)) jsonb_path_ops`);
      expect(mirrors.filter((m) => m.def.includes(`'_id'`))).toEqual([]);

      const idIndex = (await indexesOf('byid', false)).find((r) => /\(\(_jsonb -> '_id'::text\)\)/.test(r.def));
      expect(idIndex?.def).toMatch(/^CREATE UNIQUE INDEX/);
      for (const filter of [
        { _id: 'doc-4242' },
        { _id: { $eq: 'doc-4242' } },
        { _id: 'doc-4242', k: 2 },
        { $or: [{ _id: 'doc-1' }, { _id: 'doc-2' }, { _id: 'doc-3' }] },
      ]) {
        const explained = await mongoose.connection.db!.command({ explain: { find: 'byid', filter } });
        const plan = JSON.stringify(explained.queryPlanner);
        expect({ filter, usesIdIndex: plan.includes(`"Index Name":"${idIndex!.name}"`) }).toEqual({
          filter,
          usesIdIndex: true,
        });
        expect(plan).not.toContain('Seq Scan');
      }
      // And the answers are MongoDB's.
      expect(await coll.find({ _id: 'doc-4242' }).toArray()).toEqual([{ _id: 'doc-4242', k: 2 }]);
      expect(await coll.countDocuments({ _id: 'doc-4242', k: 3 })).toBe(0);
      expect(
        (await coll.find({ $or: [{ _id: 'doc-1' }, { _id: 'doc-2' }, { _id: 'missing' }] }).toArray())
          .map((d) => d._id)
          .sort()
      ).toEqual(['doc-1', 'doc-2']);
    },
    60_000
  );

  itOnFerretDb(
    "a non-unique index's btree holds no rows, a unique one's all; pages, equalities and uniqueness are as before",
    async () => {
      await expectFerretDb();
      expect(postgresUrl).toBeTruthy();
      type Doc = { _id: string; k: number; u: string; org: string; at: Date; task?: string };
      const coll = mongoose.connection.collection<Doc>('sparse');
      await coll.createIndex({ k: 1 });
      await coll.createIndex({ u: 1 }, { unique: true });
      await coll.createIndex({ task: 1, org: 1, at: -1, _id: -1 });
      // 5,000 documents, 1 in 50 with a task (as executions and their `taskId`).
      for (let b = 0; b < 5; b++) {
        await coll.insertMany(
          Array.from({ length: 1000 }, (_, i) => {
            const n = b * 1000 + i;
            return {
              _id: `doc-${n}`,
              k: n % 10,
              u: `u-${n}`,
              org: `org-${n % 3}`,
              at: new Date(1_700_000_000_000 + n * 1000),
              ...(n % 50 === 0 ? { task: `task-${(n / 50) % 2}` } : {}),
            };
          })
        );
      }
      const table = `${pg.escapeIdentifier(dbName)}.${pg.escapeIdentifier(await tableOf('sparse'))}`;
      // The wrapper's pass (every second) empties the btrees and makes the mirrors: wait until it has.
      const entries = async (): Promise<Record<string, number>> => {
        await client!.query(`VACUUM ANALYZE ${table}`);
        const { rows } = await client!.query<{ name: string; def: string; tuples: number }>(
          `SELECT c.relname AS name, pg_get_indexdef(c.oid) AS def, c.reltuples::int AS tuples
             FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid WHERE i.indrelid = $1::regclass`,
          [table]
        );
        const label = (r: { name: string; def: string }): string =>
          r.name.endsWith('_aasord')
            ? 'ordered'
            : r.name.endsWith('_aasgin')
              ? `gin ${r.def.match(/_jsonb -> '(\w+)'/)![1]}`
              : r.name.endsWith('_aasarr')
                ? `arrays ${r.def.match(/-> '(\w+)'::text\) ->> 't'/)![1]}`
                : `${r.def.startsWith('CREATE UNIQUE') ? 'unique ' : ''}btree ${r.def.match(/_jsonb -> '(\w+)'/)![1]}${/ WHERE false$/.test(r.def) ? ' (empty)' : ''}`;
        return Object.fromEntries(rows.map((r) => [label(r), r.tuples]));
      };
      const deadline = Date.now() + 15_000;
      let found = await entries();
      while (Object.keys(found).length < 11 && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 300));
        found = await entries();
      }
      expect(found).toEqual({
        'unique btree _id': 5000,
        'unique btree u': 5000,
        'btree k (empty)': 0,
        'btree task (empty)': 0,
        'gin k': expect.any(Number),
        'gin u': expect.any(Number),
        'gin task': expect.any(Number),
        'arrays task': 0,
        'arrays org': 0,
        'arrays at': 0,
        ordered: 5000,
      });
      // The listed indexes are FerretDB's as before.
      const listed = await coll.listIndexes().toArray();
      expect(listed.map((l) => l.name).sort()).toEqual(['_id_', 'k_1', 'task_1_org_1_at_-1__id_-1', 'u_1']);

      // A page of one task's documents, from the mirrors.
      const filter = { task: 'task-0', org: 'org-0' };
      const explained = await mongoose.connection.db!.command({
        explain: { find: 'sparse', filter, sort: { at: -1, _id: -1 }, limit: 5 },
      });
      const plan = JSON.stringify(explained.queryPlanner);
      expect(plan).not.toContain('Seq Scan');
      const page = await coll.find(filter).sort({ at: -1, _id: -1 }).limit(5).toArray();
      const all = Array.from({ length: 5000 }, (_, n) => n).filter((n) => n % 100 === 0 && n % 3 === 0);
      expect(page.map((d) => d._id)).toEqual(
        all
          .reverse()
          .slice(0, 5)
          .map((n) => `doc-${n}`)
      );
      // Equalities on the emptied btrees' fields are still answered (GIN mirror), and the unique index still holds.
      expect(await coll.countDocuments({ k: 7 })).toBe(500);
      await expect(coll.insertOne({ _id: 'dup', k: 1, u: 'u-1', org: 'org-0', at: new Date() })).rejects.toMatchObject({
        code: 11000,
      });
    },
    60_000
  );
});
