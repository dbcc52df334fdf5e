/**
 * `npm run bench:bytes`: database bytes per JSON execution (issue 37's target: tables + indexes, WAL apart). Runs
 * BYTES_TOTAL (500) JSON executions, each in a new conversation, BYTES_CONCURRENCY (10) at a time, with the fake
 * model's BYTES_MESSAGE ('[chunks:100] hi': a 100-delta reply), and prints per collection the bytes its table and
 * its indexes grew by, divided by the executions.
 *
 * Under FerretDB each collection is a PostgreSQL table (its name in the database's `_ferretdb_database_metadata`),
 * with FerretDB's own indexes and the embedded layer's GIN mirrors on it: `pg_table_size` (heap + TOAST) and
 * `pg_indexes_size`. Sizes are read after `VACUUM FULL` (BYTES_VACUUM=plain: after plain `VACUUM`, which keeps
 * the pages that updates and dead tuples took), before the run (after a warm-up) and after it, so what the run added
 * is what counts. With a mongod: `collStats`' storageSize and totalIndexSize after `compact`.
 *
 * Then the engine's share (issue 37 lever 5): the Temporal history of BYTES_HISTORIES (20) of the run's executions,
 * each event's encoded size by type, and the payloads in them by role (the workflow's input, the local activities'
 * results in their markers, the memo, search attributes, the workflow's result).
 */
import pg from 'pg';
import mongoose from 'mongoose';
import { Client, Connection } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { Execution } from '../../models';
import { executionWorkflowId } from '../../workflows/ids';
import { bootstrapOrganization } from '../../commands/bootstrap';
import { connectMongo, disconnectMongo } from '../../lib/mongo';
import { ApiClient } from './client';
import { executeJson, throughput } from './scenarios';
import { BENCH_DB, startStack, type Stack } from './stack';
import { runBench } from './run';

const say = (line: string): void => void process.stderr.write(`[bytes] ${line}\n`);
const TOTAL = Number(process.env.BYTES_TOTAL ?? 500);
const CONCURRENCY = Number(process.env.BYTES_CONCURRENCY ?? 10);
const MESSAGE = process.env.BYTES_MESSAGE ?? '[chunks:100] hi';
const FULL = process.env.BYTES_VACUUM !== 'plain';
/** Time the last writes of the run get (a finish's service events, off-path folds) before sizes are read. */
const SETTLE_MS = Number(process.env.BYTES_SETTLE_MS ?? 5000);

/** Bytes of one collection. */
export interface CollectionSize {
  table: number;
  indexes: number;
  /** Documents (rows) in it. */
  count: number;
  /** Bytes of each PostgreSQL index on its table (FerretDB's own and the embedded layer's mirrors). */
  byIndex?: Record<string, number>;
  /**
   * Row versions written so far (pg_stat_user_tables: inserts, and updates, each a new row version under FerretDB,
   * which rewrites the whole `_jsonb`): each writes one entry into every index of the table whose predicate it meets.
   */
  written?: number;
}

/**
 * @param name a PostgreSQL index's name.
 * @param def its definition.
 * @returns a short label: its kind (FerretDB's btree, the embedded layer's GIN, ordered or array mirror) and fields.
 */
function indexLabel(name: string, def: string): string {
  const fields = [...new Set([...def.matchAll(/_jsonb -> '([^']+)'/g)].map((m) => m[1]))];
  const kind = name.endsWith('_aasgin')
    ? 'gin'
    : name.endsWith('_aasord')
      ? 'ordered'
      : name.endsWith('_aasarr')
        ? 'arrays'
        : 'btree';
  // FerretDB's btree of a non-unique index, emptied by the embedded layer (tools/ferretdb/main.go emptyBtrees).
  const empty = / WHERE false$/.test(def) ? ' empty' : '';
  return `${kind}(${fields.join(',') || name})${empty}`;
}

/**
 * @param client a PostgreSQL connection to FerretDB's database.
 * @param schema the MongoDB database's name (FerretDB's schema).
 * @param full `VACUUM FULL` (compact) rather than plain `VACUUM`.
 * @returns per collection, its table's and indexes' sizes.
 */
export async function postgresSizes(
  client: pg.Client,
  schema: string,
  full: boolean
): Promise<Record<string, CollectionSize>> {
  const { rows } = await client.query<{ collection: string; table: string; listed: string[] | null }>(
    `SELECT _jsonb->>'_id' AS collection, _jsonb->>'table' AS table,
            ARRAY(SELECT i->>'pgindex' FROM jsonb_array_elements(_jsonb->'indexes') i) AS listed
       FROM ${pg.escapeIdentifier(schema)}._ferretdb_database_metadata`
  );
  const out: Record<string, CollectionSize> = {};
  for (const { collection, table, listed } of rows) {
    const name = `${pg.escapeIdentifier(schema)}.${pg.escapeIdentifier(table)}`;
    await client.query(`VACUUM ${full ? 'FULL ' : ''}ANALYZE ${name}`);
    const { rows: sized } = await client.query<{ table: string; indexes: string; count: string; written: string }>(
      `SELECT pg_table_size($1::regclass) AS table, pg_indexes_size($1::regclass) AS indexes,
              (SELECT count(*) FROM ${name}) AS count,
              (SELECT n_tup_ins + n_tup_upd FROM pg_stat_user_tables WHERE relid = $1::regclass) AS written`,
      [name]
    );
    const { rows: each } = await client.query<{ name: string; def: string; bytes: string }>(
      `SELECT c.relname AS name, pg_get_indexdef(c.oid) AS def, pg_relation_size(c.oid) AS bytes
         FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid WHERE i.indrelid = $1::regclass`,
      [name]
    );
    out[collection] = {
      table: Number(sized[0].table),
      indexes: Number(sized[0].indexes),
      count: Number(sized[0].count),
      written: Number(sized[0].written ?? 0),
      byIndex: Object.fromEntries(
        each.map((r, i, all) => {
          // A btree FerretDB's metadata does not list: made twice by processes creating the same index at once.
          const unlisted = !/_aas(gin|ord|arr)$/.test(r.name) && listed !== null && !listed.includes(r.name);
          const label = `${unlisted ? 'unlisted ' : ''}${indexLabel(r.name, r.def)}`;
          const twin = all.slice(0, i).filter((o) => indexLabel(o.name, o.def) === label).length;
          return [twin ? `${label}#${twin + 1}` : label, Number(r.bytes)];
        })
      ),
    };
  }
  return out;
}

const HISTORIES = Number(process.env.BYTES_HISTORIES ?? 20);

/**
 * @param stack the running system.
 * @param n how many executions' histories to read.
 * @returns lines: bytes per execution of each event type and of each kind of payload.
 */
async function historySizes(stack: Stack, n: number): Promise<string[]> {
  const connection = await Connection.connect({ address: stack.temporalAddress });
  try {
    const client = new Client({ connection, namespace: 'default' });
    const ids = (await Execution.find({}).sort({ createdAt: -1 }).limit(n).select({ _id: 1 }).lean()).map((e) => e._id);
    const byEvent: Record<string, number> = {};
    const byPayload: Record<string, number> = {};
    const add = (m: Record<string, number>, k: string, v: number): void => void (m[k] = (m[k] ?? 0) + v);
    const sizeOf = (p: { metadata?: Record<string, Uint8Array> | null; data?: Uint8Array | null }): number =>
      temporal.api.common.v1.Payload.encode(p).finish().length;
    const payloads = (ps?: { payloads?: Array<Parameters<typeof sizeOf>[0]> | null } | null): number =>
      (ps?.payloads ?? []).reduce((sum, p) => sum + sizeOf(p), 0);
    for (const id of ids) {
      const history = await client.workflow.getHandle(executionWorkflowId(id)).fetchHistory();
      for (const e of history.events ?? []) {
        const type = temporal.api.enums.v1.EventType[e.eventType ?? 0].replace('EVENT_TYPE_', '');
        add(byEvent, type, temporal.api.history.v1.HistoryEvent.encode(e).finish().length);
        const started = e.workflowExecutionStartedEventAttributes;
        if (started) {
          add(byPayload, 'input', payloads(started.input));
          const memo = Object.values(started.memo?.fields ?? {}).reduce((s, p) => s + sizeOf(p), 0);
          add(byPayload, 'memo', memo);
          const sa = Object.values(started.searchAttributes?.indexedFields ?? {}).reduce((s, p) => s + sizeOf(p), 0);
          add(byPayload, 'search attributes', sa);
          add(
            byPayload,
            'header',
            Object.values(started.header?.fields ?? {}).reduce((s, p) => s + sizeOf(p), 0)
          );
        }
        const marker = e.markerRecordedEventAttributes;
        if (marker)
          for (const [name, ps] of Object.entries(marker.details ?? {})) add(byPayload, `marker ${name}`, payloads(ps));
        const upsert = e.upsertWorkflowSearchAttributesEventAttributes;
        if (upsert)
          add(
            byPayload,
            'search attribute upserts',
            Object.values(upsert.searchAttributes?.indexedFields ?? {}).reduce((s, p) => s + sizeOf(p), 0)
          );
        const done = e.workflowExecutionCompletedEventAttributes;
        if (done) add(byPayload, 'result', payloads(done.result));
      }
    }
    const per = (m: Record<string, number>): string =>
      Object.entries(m)
        .sort((a, b) => b[1] - a[1])
        .map(([k, v]) => `${k} ${(v / ids.length).toFixed(0)}`)
        .join(', ');
    const total = Object.values(byEvent).reduce((s, v) => s + v, 0) / ids.length;
    return [
      `history of ${ids.length} executions, bytes per execution: ${total.toFixed(0)} in events (${per(byEvent)})`,
      `  of which payloads: ${per(byPayload)}`,
    ];
  } finally {
    await connection.close();
  }
}

/** @returns per collection, a mongod's storage and index sizes (after `compact`). */
async function mongodSizes(): Promise<Record<string, CollectionSize>> {
  const db = mongoose.connection.db!;
  const out: Record<string, CollectionSize> = {};
  for (const { name } of await db.listCollections().toArray()) {
    await db.command({ compact: name }).catch(() => undefined);
    const stats = await db.command({ collStats: name });
    out[name] = {
      table: Number(stats.storageSize ?? 0),
      indexes: Number(stats.totalIndexSize ?? 0),
      count: Number(stats.count ?? 0),
    };
  }
  return out;
}

/**
 * @param before sizes before the run.
 * @param after sizes after it.
 * @param n executions of the run.
 * @returns the table, one line per collection that grew, largest first, and the total per execution.
 */
export function perExecution(
  before: Record<string, CollectionSize>,
  after: Record<string, CollectionSize>,
  n: number
): { lines: string[]; total: number } {
  const rows = Object.entries(after).map(([name, a]) => {
    const b = before[name] ?? { table: 0, indexes: 0, count: 0 };
    return {
      name,
      table: (a.table - b.table) / n,
      indexes: (a.indexes - b.indexes) / n,
      docs: (a.count - b.count) / n,
    };
  });
  const grew = rows.filter((r) => r.table !== 0 || r.indexes !== 0 || r.docs !== 0);
  grew.sort((x, y) => y.table + y.indexes - (x.table + x.indexes));
  const total = grew.reduce((sum, r) => sum + r.table + r.indexes, 0);
  const fmt = (v: number): string => v.toFixed(0).padStart(8);
  const lines = [
    `${'collection'.padEnd(22)}${'table'.padStart(8)}${'indexes'.padStart(8)}${'total'.padStart(8)}${'docs'.padStart(8)}`,
    ...grew.map(
      (r) =>
        `${r.name.padEnd(22)}${fmt(r.table)}${fmt(r.indexes)}${fmt(r.table + r.indexes)}${r.docs.toFixed(2).padStart(8)}`
    ),
    `${'total'.padEnd(22)}${fmt(grew.reduce((s, r) => s + r.table, 0))}${fmt(grew.reduce((s, r) => s + r.indexes, 0))}${fmt(total)}`,
  ];
  for (const r of grew) {
    const a = after[r.name].byIndex ?? {};
    const b = before[r.name]?.byIndex ?? {};
    const parts = Object.entries(a)
      .map(([index, bytes]) => [index, (bytes - (b[index] ?? 0)) / n] as const)
      .filter(([, bytes]) => bytes !== 0)
      .map(([index, bytes]) => `${index} ${bytes.toFixed(0)}`);
    if (parts.length > 0) lines.push(`  ${r.name}: ${parts.join(', ')}`);
    // Index entries written: each row version of the run (insert or update) into each index that holds it: every
    // index without a predicate, and a partial one (an ordered mirror of a field the rows may lack) only if it grew.
    // Indexes that hold no rows (emptied btrees, the mirrors of array values) take none.
    const written = ((after[r.name].written ?? 0) - (before[r.name]?.written ?? 0)) / n;
    const holding = Object.keys(a).filter(
      (index) =>
        !index.endsWith(' empty') &&
        !index.startsWith('arrays') &&
        (!index.startsWith('ordered') || (a[index] ?? 0) !== (b[index] ?? 0))
    );
    if (written > 0)
      lines.push(
        `  ${r.name}: ${written.toFixed(2)} row versions per execution x ${holding.length} indexes = ` +
          `${(written * holding.length).toFixed(1)} index entries`
      );
  }
  return { lines, total };
}

async function sizes(stack: Stack, client: pg.Client | undefined): Promise<Record<string, CollectionSize>> {
  return client ? postgresSizes(client, BENCH_DB, FULL) : mongodSizes();
}

async function main(): Promise<void> {
  const stack = await startStack(say);
  for (const signal of ['SIGINT', 'SIGTERM'] as const)
    process.once(signal, () => void stack.stop().finally(() => process.exit(130)));
  let client: pg.Client | undefined;
  try {
    await connectMongo(stack.mongoUri, { dbName: BENCH_DB });
    if (stack.postgresUrl) {
      client = new pg.Client({ connectionString: stack.postgresUrl });
      await client.connect();
    }
    const boot = await bootstrapOrganization({ org: 'Bytes', email: 'bytes@example.com' });
    const api = new ApiClient(stack.apiUrl, boot.apiToken);
    const agent = await api.json<{ id: string }>('POST', '/api/v1/agents', { name: 'B', systemPrompt: 'x' });
    await executeJson(api, agent.body.id, 'warm-up', 90_000);
    await throughput(api, agent.body.id, 20, CONCURRENCY, MESSAGE);
    await new Promise((r) => setTimeout(r, SETTLE_MS));
    const before = await sizes(stack, client);
    const tp = await throughput(api, agent.body.id, TOTAL, CONCURRENCY, MESSAGE);
    const done = tp.total - tp.failures.length;
    if (tp.failures.length > 0) say(`${tp.failures.length} failed, the first: ${tp.failures[0].reason}`);
    await new Promise((r) => setTimeout(r, SETTLE_MS));
    const after = await sizes(stack, client);
    const { lines, total } = perExecution(before, after, done);
    say(
      `${done} executions of '${MESSAGE}' (new conversation each), ${stack.mongoKind}` +
        `${client ? `, sizes after VACUUM${FULL ? ' FULL' : ''}` : ''}; bytes per execution:`
    );
    for (const line of lines) say(`  ${line}`);
    say(`total ${(total / 1024).toFixed(1)} KB per execution`);
    if (HISTORIES > 0) for (const line of await historySizes(stack, HISTORIES)) say(line);
    await disconnectMongo();
  } finally {
    await client?.end().catch(() => undefined);
    await stack.stop();
  }
}

runBench(main, say);
