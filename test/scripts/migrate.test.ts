/**
 * `admin migrate` and `admin check` over the real servers (docs/decisions.md "Indexes in production: admin
 * migrate"): on an empty database and a new Temporal namespace, check says what is missing, migrate creates the
 * same collections and indexes as a development start and registers the search attributes, check then passes; a
 * production api or worker refuses to start on a database without its unique indexes.
 */
import { randomBytes } from 'node:crypto';
import { Connection } from '@temporalio/client';
import { msToTs } from '@temporalio/common/lib/time';
import mongoose from 'mongoose';
import { SEARCH_ATTRIBUTES } from '../../workflows/searchAttributes';
import { childTestEnv } from '../helpers/env';
import { uniqueDbName, useTestDatabase } from '../helpers/mongo';
import { runScriptAsync, spawnScript, type Spawned } from '../helpers/processes';

/** The file's database: connected by this process as development does (every index built at connection). */
const dev = useTestDatabase();
const extraDbs: string[] = [];
const started: Spawned[] = [];

/** @returns a URI naming a new, empty database (dropped after the file). */
function emptyDatabase(): string {
  const name = uniqueDbName();
  extraDbs.push(name);
  const url = new URL(process.env.MONGODB_URI as string);
  url.pathname = `/${name}`;
  return url.toString();
}

const admin = (env: Record<string, string>, ...args: string[]): ReturnType<typeof runScriptAsync> =>
  runScriptAsync('scripts/admin.ts', args, childTestEnv(env));

/** @returns every collection's indexes of a database: name, key and the options that matter. */
async function indexesOf(dbName: string): Promise<Record<string, unknown[]>> {
  const db = mongoose.connection.getClient().db(dbName);
  const out: Record<string, unknown[]> = {};
  for (const { name } of await db.listCollections({}, { nameOnly: true }).toArray()) {
    const indexes = await db.collection(name).listIndexes().toArray();
    out[name] = indexes
      .map((i) => ({
        name: i.name,
        key: i.key,
        unique: i.unique === true,
        expireAfterSeconds: i.expireAfterSeconds ?? null,
      }))
      .sort((a, b) => String(a.name).localeCompare(String(b.name)));
  }
  return out;
}

let temporal: Connection;
beforeAll(async () => {
  temporal = await Connection.connect({ address: process.env.TEMPORAL_ADDRESS as string });
});
afterAll(async () => {
  for (const p of started) p.crash();
  for (const name of extraDbs)
    await mongoose.connection
      .getClient()
      .db(name)
      .dropDatabase()
      .catch(() => undefined);
  await temporal?.close();
});

it('on an empty database and a new namespace: check says what is missing, migrate creates what a development start builds and registers the search attributes, check then passes', async () => {
  const namespace = `migrate-${randomBytes(4).toString('hex')}`;
  await temporal.workflowService.registerNamespace({
    namespace,
    workflowExecutionRetentionPeriod: msToTs('1 day'),
  });
  const uri = emptyDatabase();
  const env = { MONGODB_URI: uri, TEMPORAL_NAMESPACE: namespace };

  const before = await admin(env, 'check');
  expect(before.status).toBe(1);
  expect(before.stdout).toBe('');
  const line = before.stderr.trim();
  expect(line.split('\n')).toHaveLength(1);
  expect(line).toMatch(/^admin: missing indexes [^;]*\busers\.email_1\b/);
  expect(line).toContain('api_tokens.hash_1');
  expect(line).toContain(
    `search attributes ${Object.keys(SEARCH_ATTRIBUTES).join(', ')} (namespace ${namespace}): run \`admin migrate\``
  );

  const migrated = await admin(env, 'migrate');
  expect([migrated.status, migrated.stderr]).toEqual([0, '']);
  const lines = migrated.stdout.trim().split('\n');
  expect(lines).toHaveLength(1);
  const report = JSON.parse(lines[0]);
  expect(report.indexes.created).toEqual(expect.arrayContaining(['users.email_1', 'api_tokens.hash_1']));
  expect(report.indexes.created).toHaveLength(report.indexes.declared);
  expect(report.searchAttributes).toEqual({ namespace, created: Object.keys(SEARCH_ATTRIBUTES), present: [] });
  expect(report.collections.created.length).toBeGreaterThan(30);

  // The same collections and indexes as the database this process connected to as development does.
  const dbName = new URL(uri).pathname.slice(1);
  expect(await indexesOf(dbName)).toEqual(await indexesOf(dev.dbName));

  // The namespace lists them, as Keyword.
  const { customAttributes } = await temporal.operatorService.listSearchAttributes({ namespace });
  for (const name of Object.keys(SEARCH_ATTRIBUTES)) expect([name, customAttributes?.[name]]).toEqual([name, 2]);

  const after = await admin(env, 'check');
  expect([after.status, after.stderr]).toEqual([0, '']);
  expect(JSON.parse(after.stdout.trim())).toMatchObject({
    mongodb: { ok: true, indexes: report.indexes.declared },
    temporal: { namespace, searchAttributes: Object.keys(SEARCH_ATTRIBUTES) },
  });

  // Again: nothing left to create, nothing dropped.
  const again = await admin(env, 'migrate');
  expect(again.status).toBe(0);
  expect(JSON.parse(again.stdout.trim())).toMatchObject({
    collections: { created: [] },
    indexes: { created: [], dropped: [], declared: report.indexes.declared },
    ttlIndexes: { created: [] },
    searchAttributes: { namespace, created: [], present: Object.keys(SEARCH_ATTRIBUTES) },
  });
  expect(await indexesOf(dbName)).toEqual(await indexesOf(dev.dbName));
}, 180_000);

it('an index the schemas do not declare is left alone; a missing one is named by check and recreated by migrate', async () => {
  const uri = emptyDatabase();
  const dbName = new URL(uri).pathname.slice(1);
  expect((await admin({ MONGODB_URI: uri }, 'migrate')).status).toBe(0);
  const db = mongoose.connection.getClient().db(dbName);
  await db.collection('users').createIndex({ name: 1 }, { name: 'operator_own' });
  await db.collection('memberships').dropIndex('userId_1');

  const check = await admin({ MONGODB_URI: uri }, 'check');
  expect(check.status).toBe(1);
  expect(check.stderr.trim()).toBe('admin: missing indexes memberships.userId_1: run `admin migrate`');

  const migrated = await admin({ MONGODB_URI: uri }, 'migrate');
  expect(migrated.status).toBe(0);
  expect(JSON.parse(migrated.stdout.trim()).indexes.created).toEqual(['memberships.userId_1']);
  const names = (await db.collection('users').listIndexes().toArray()).map((i) => i.name);
  expect(names).toContain('operator_own');
  expect((await admin({ MONGODB_URI: uri }, 'check')).status).toBe(0);
}, 180_000);

it('a retired index (replaced by another) is dropped by migrate, once; check does not ask for it', async () => {
  const uri = emptyDatabase();
  const dbName = new URL(uri).pathname.slice(1);
  const first = await admin({ MONGODB_URI: uri }, 'migrate');
  expect(first.status).toBe(0);
  expect(JSON.parse(first.stdout.trim()).indexes.dropped).toEqual([]);
  const chats = mongoose.connection.getClient().db(dbName).collection('chats');
  // A database migrated before the chats' `{organizationId, spaceId, createdAt}` was replaced by `{spaceId}`.
  await chats.createIndex({ organizationId: 1, spaceId: 1, createdAt: -1 });
  const names = async (): Promise<string[]> => (await chats.listIndexes().toArray()).map((i) => String(i.name)).sort();
  expect(await names()).toContain('organizationId_1_spaceId_1_createdAt_-1');

  const migrated = await admin({ MONGODB_URI: uri }, 'migrate');
  expect([migrated.status, migrated.stderr]).toEqual([0, '']);
  expect(JSON.parse(migrated.stdout.trim()).indexes).toMatchObject({
    created: [],
    dropped: ['chats.organizationId_1_spaceId_1_createdAt_-1'],
  });
  expect(await names()).not.toContain('organizationId_1_spaceId_1_createdAt_-1');
  expect(await names()).toContain('spaceId_1');
  expect(JSON.parse((await admin({ MONGODB_URI: uri }, 'migrate')).stdout.trim()).indexes.dropped).toEqual([]);
  expect((await admin({ MONGODB_URI: uri }, 'check')).status).toBe(0);
}, 180_000);

it('in production the api and the worker refuse to start without the unique indexes, in one line naming admin migrate; after migrate the api starts', async () => {
  const uri = emptyDatabase();
  const env = childTestEnv({ NODE_ENV: 'production', MONGODB_URI: uri, PORT: '0', LOG_LEVEL: 'info' });
  for (const entry of ['api/server.ts', 'worker/index.ts']) {
    const res = await runScriptAsync(entry, [], env);
    expect([entry, res.status]).toEqual([entry, 1]);
    const fatal = (res.stdout + res.stderr)
      .split('\n')
      .filter((l) => l.includes('"level":60'))
      .map((l) => JSON.parse(l).msg as string);
    expect([entry, fatal]).toEqual([
      entry,
      [expect.stringMatching(/^the database lacks the unique indexes .*users\.email_1.*: run `admin migrate`/)],
    ]);
  }
  // Production builds nothing at start: the database is as empty as it was.
  expect(await mongoose.connection.getClient().db(new URL(uri).pathname.slice(1)).listCollections().toArray()).toEqual(
    []
  );

  expect((await admin({ MONGODB_URI: uri }, 'migrate')).status).toBe(0);
  const api = spawnScript('api/server.ts', env);
  started.push(api);
  await api.waitFor(/"msg":"api listening"/, 90_000);
  expect(api.output()).not.toMatch(/lacks the (unique )?indexes/);
}, 240_000);
