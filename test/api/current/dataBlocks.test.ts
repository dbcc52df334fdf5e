/**
 * Data blocks over real HTTP with the real engine (DuckDB) on real files: typed answers over CSV, JSON and
 * Parquet files of the workspace; the row, time and memory limits; and refusal of anything but one SELECT, of
 * table functions that read files, and of every path outside the workspace (absolute, `..`, encoded, symlinks,
 * another workspace's files, URLs).
 */
import { mkdirSync, mkdtempSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { useTestApp, type TestApp } from '../../helpers/app';
import { currentAs } from '../../helpers/current';
import { bearer, buildOrg, buildWorkspace } from '../../helpers/factories';
import { useTestDatabase } from '../../helpers/mongo';

useTestDatabase();
const t = useTestApp();
const limited = useTestApp({ DATA_QUERY_TIMEOUT_MS: '300', DATA_QUERY_MEMORY_BYTES: String(32 * 1024 * 1024) });

const outside = mkdtempSync(path.join(os.tmpdir(), 'outside-'));
writeFileSync(path.join(outside, 'secret.csv'), 'secret\nhunter2\n');

async function workspace(app: TestApp = t) {
  const { org, id, dir } = await buildWorkspace(app, { name: 'Data' });
  const api = currentAs(app, org.serviceToken);
  const put = (p: string, body: string | Buffer) =>
    app.request
      .put(`/api/workspaces/${id}/files/content`)
      .query({ path: p })
      .set('Authorization', bearer(org.serviceToken))
      .set('Content-Type', 'application/octet-stream')
      .send(body);
  const query = (sql: string, extra: object = {}) => api.post(`/workspaces/${id}/data-blocks/query`, { sql, ...extra });
  return { org, id, api, put, query, dir };
}

/** A Parquet file written by the engine itself (from a CSV in a scratch directory). */
async function parquetBytes(): Promise<Buffer> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'parquet-'));
  const file = path.join(dir, 'p.parquet');
  const db = await DuckDBInstance.create(':memory:');
  const conn = await db.connect();
  await conn.run(
    `COPY (SELECT * FROM (VALUES (1, DATE '2026-01-02', 10.5), (2, DATE '2026-02-03', 20.25)) v(id, day, amount)) TO '${file}' (FORMAT parquet)`
  );
  conn.closeSync();
  db.closeSync();
  return (await import('node:fs')).readFileSync(file);
}

describe('data blocks: typed answers', () => {
  it('queries CSV, JSON and Parquet files by path, joined, with typed columns', async () => {
    const w = await workspace();
    expect((await w.put('data/sales.csv', 'id,region,amount\n1,north,12.5\n2,south,7\n3,north,1.25\n')).status).toBe(
      201
    );
    expect(
      (await w.put('data/regions.json', '[{"region":"north","manager":"Ada"},{"region":"south","manager":"Bo"}]'))
        .status
    ).toBe(201);
    expect((await w.put('events.parquet', await parquetBytes())).status).toBe(201);

    const joined = await w.query(
      `SELECT r.manager, sum(s.amount) AS total, count(*) AS n FROM 'data/sales.csv' s
       JOIN 'data/regions.json' r USING (region) GROUP BY r.manager ORDER BY r.manager`
    );
    expect([joined.status, joined.body.error]).toEqual([200, undefined]);
    expect(joined.body.result).toEqual({
      columns: [
        { name: 'manager', type: 'VARCHAR' },
        { name: 'total', type: 'DOUBLE' },
        { name: 'n', type: 'BIGINT' },
      ],
      rows: [
        ['Ada', 13.75, '2'],
        ['Bo', 7, '1'],
      ],
      row_count: 2,
      truncated: false,
      tables: expect.arrayContaining(['data/sales.csv', 'data/regions.json']),
    });

    const parquet = await w.query(
      `WITH p AS (SELECT * FROM "events.parquet") SELECT id, day, amount FROM p WHERE id = 2`
    );
    expect(parquet.status).toBe(200);
    expect(parquet.body.result.columns).toEqual([
      { name: 'id', type: 'INTEGER' },
      { name: 'day', type: 'DATE' },
      { name: 'amount', type: 'DECIMAL(4,2)' },
    ]);
    expect(parquet.body.result.rows).toEqual([[2, '2026-02-03', '20.25']]);
  }, 120_000);
});

describe('data blocks: limits', () => {
  it('answers at most max_rows rows and says it left some out', async () => {
    const w = await workspace();
    const r = await w.query('SELECT x FROM range(5000) t(x) ORDER BY x', { max_rows: 3 });
    expect(r.status).toBe(200);
    expect(r.body.result).toMatchObject({ rows: [['0'], ['1'], ['2']], row_count: 3, truncated: true });
    const all = await w.query('SELECT x FROM range(3) t(x)', { max_rows: 3 });
    expect(all.body.result).toMatchObject({ row_count: 3, truncated: false });
    const over = await w.query('SELECT 1', { max_rows: t.config.dataQuery.maxRows + 1 });
    expect(over.status).toBe(400);
  }, 120_000);

  it('interrupts a query past the time limit (422) and refuses one past the memory limit (422)', async () => {
    const w = await workspace(limited);
    const slow = await w.query('SELECT count(*) FROM range(100000000000) t(x) WHERE x % 7 = 3');
    expect(slow.status).toBe(422);
    expect(slow.body.error).toEqual({
      code: 'query_limit_exceeded',
      message: 'The query exceeded its time limit of 300 ms',
    });
    const big = await w.query('SELECT list(x) FROM range(50000000) t(x)');
    expect([big.status, big.body.error?.message]).toEqual([422, expect.stringMatching(/memory limit/)]);
    expect(big.body.error.code).toBe('query_limit_exceeded');
    expect(big.body.error.message).toMatch(/memory limit/);
    // The engine is usable again afterwards.
    expect((await w.query('SELECT 42 AS answer')).body.result.rows).toEqual([[42]]);
  }, 120_000);
});

describe('data blocks: read-only, inside the workspace', () => {
  it('refuses every statement that is not one SELECT, as the engine parses it', async () => {
    const w = await workspace();
    await w.put('a.csv', 'x\n1\n');
    for (const sql of [
      'CREATE TABLE t (a INTEGER)',
      "COPY (SELECT 1) TO 'out.csv'",
      "INSERT INTO 'a.csv' VALUES (2)",
      "ATTACH 'other.db'",
      'INSTALL httpfs',
      "LOAD 'httpfs'",
      'SET enable_external_access = true',
      'PRAGMA show_tables',
      'SELECT 1; SELECT 2',
      "SELECT 1; COPY (SELECT 1) TO 'b.csv'",
      "EXPLAIN SELECT * FROM 'a.csv'",
      'SELEC 1',
    ]) {
      const r = await w.query(sql);
      expect([sql, r.status]).toEqual([sql, 400]);
      expect(r.body.error.code).toBe('validation_failed');
    }
    expect((await w.api.get(`/workspaces/${w.id}/files`)).body.entries.map((e: { name: string }) => e.name)).toEqual([
      'a.csv',
    ]);
  }, 120_000);

  it('refuses files outside the workspace, table functions that read files, and symlinks leading out', async () => {
    const w = await workspace();
    const other = await workspace();
    await other.put('theirs.csv', 'secret\nx\n');
    await w.put('mine.csv', 'a\n1\n');
    mkdirSync(w.dir, { recursive: true });
    symlinkSync(path.join(outside, 'secret.csv'), path.join(w.dir, 'link.csv'));
    for (const [sql, message] of [
      [`SELECT * FROM '${path.join(outside, 'secret.csv')}'`, /Invalid path/],
      [`SELECT * FROM '../${other.id}/theirs.csv'`, /Invalid path/],
      ["SELECT * FROM '%2e%2e/x.csv'", /Invalid path/],
      ["SELECT * FROM '%252e%252e/x.csv'", /Invalid path/],
      ["SELECT * FROM 'link.csv'", /symbolic link/],
      ["SELECT * FROM 'theirs.csv'", /Unknown table theirs.csv/],
      ["SELECT * FROM 'https://example.com/data.csv'", /Invalid path/],
      [`SELECT * FROM read_csv('${path.join(outside, 'secret.csv')}')`, /Table function read_csv\(\) is not allowed/],
      ["SELECT * FROM read_text('mine.csv')", /not allowed/],
      ["SELECT * FROM glob('*')", /not allowed/],
      ['SELECT * FROM duckdb_settings()', /not allowed/],
      ['SELECT * FROM information_schema.tables', /no schema names/],
      ['SELECT * FROM missing.csv', /Unknown table|no schema names/],
      ["SELECT * FROM 'mine.txt'", /Unknown table mine.txt/],
    ] as const) {
      const r = await w.query(sql);
      expect([sql, r.status]).toEqual([sql, 400]);
      expect([sql, r.body.error.message]).toEqual([sql, expect.stringMatching(message)]);
    }
    // A subquery hiding a table function is found too.
    const hidden = await w.query(
      `SELECT * FROM 'mine.csv' WHERE a IN (SELECT 1 FROM read_csv('${path.join(outside, 'secret.csv')}'))`
    );
    expect(hidden.status).toBe(400);
    // The workspace's own file still answers.
    expect((await w.query("SELECT a FROM 'mine.csv'")).body.result.rows).toEqual([['1']]);
  }, 120_000);

  it('is another organization’s 404 and needs the workspaces:read scope', async () => {
    const w = await workspace();
    const stranger = await buildOrg();
    const r = await currentAs(t, stranger.serviceToken).post(`/workspaces/${w.id}/data-blocks/query`, {
      sql: 'SELECT 1',
    });
    expect(r.status).toBe(404);
  }, 120_000);
});
