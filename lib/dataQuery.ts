/**
 * Read-only SQL over tabular files through an embedded DuckDB (`@duckdb/node-api`) [docs/decisions.md "Data
 * blocks"]. One in-memory database per query, thrown away after it:
 * 1. The statement is parsed by DuckDB itself (`json_serialize_sql`, which serializes SELECT statements only, and
 *    `extractStatements` + the prepared statement's type): exactly one SELECT, nothing else.
 * 2. Its syntax tree is walked: every table it reads is a base table named by a path (`FROM 'data/sales.csv'`),
 *    resolved by the caller's `resolveTable` (workspace path rules, symlinks checked) to one local file; CTE names
 *    are left alone; table functions are refused except pure generators (`range`, `generate_series`, `unnest`).
 * 3. Each file becomes a view of the same name over `read_csv` / `read_json_auto` / `read_parquet`; then external
 *    access is switched off except for exactly those files (`allowed_paths`), extension loading and spilling to
 *    disk are off, and the configuration is locked: the engine itself refuses any other file, and there is no
 *    network (no httpfs is built in and nothing may be installed).
 * 4. The query runs with `threads=1` and `memory_limit`, is interrupted after `timeoutMs`, and at most `maxRows`
 *    rows are read from its result stream.
 * DuckDB's Node bindings run every call on libuv's thread pool, never on the event loop; at most `concurrency`
 * queries run at once per process (more wait, a few at most, then 429) so the pool stays free for file I/O.
 */
import {
  DuckDBInstance,
  JsonDuckDBValueConverter,
  StatementType,
  type DuckDBConnection,
  type DuckDBResult,
  type Json,
} from '@duckdb/node-api';
import { AppError, QueryLimitError, RateLimitedError, ValidationError } from './errors';

/** The readers by file extension (lower case). */
const READERS: Record<string, string> = {
  csv: 'read_csv',
  tsv: 'read_csv',
  json: 'read_json_auto',
  jsonl: 'read_json_auto',
  ndjson: 'read_json_auto',
  parquet: 'read_parquet',
};

/** Table functions that read nothing outside the query itself. */
const GENERATORS = new Set(['range', 'generate_series', 'unnest']);

/** @returns the reader of a file name, or undefined when it is not a tabular file. */
export function readerFor(name: string): string | undefined {
  const dot = name.lastIndexOf('.');
  return dot < 0 ? undefined : READERS[name.slice(dot + 1).toLowerCase()];
}

export interface QueryLimits {
  maxRows: number;
  timeoutMs: number;
  memoryBytes: number;
  concurrency: number;
}

export interface QueryColumn {
  name: string;
  /** DuckDB's type name (`BIGINT`, `DOUBLE`, `VARCHAR`, `DATE`, `DECIMAL(18,3)`, `VARCHAR[]`, …). */
  type: string;
}

export interface QueryResult {
  columns: QueryColumn[];
  /** Rows as arrays in column order; JSON values (64-bit and larger integers and decimals as strings). */
  rows: Json[][];
  /** More rows than `maxRows` were available (the answer holds the first `maxRows`). */
  truncated: boolean;
  /** The files the query read, as the caller named them. */
  tables: string[];
}

/**
 * @param name a table name as written in the query.
 * @returns the local file to read, or null when the name is not a tabular file of the workspace.
 * @throws ValidationError for a name that breaks the workspace path rules.
 */
export type TableResolver = (name: string) => Promise<string | null>;

const quoteIdent = (s: string): string => `"${s.replace(/"/g, '""')}"`;
const quoteString = (s: string): string => `'${s.replace(/'/g, "''")}'`;

/** What the syntax tree reads: base tables (minus CTE names), and table functions. */
function tablesOf(tree: unknown): { tables: Set<string>; functions: Set<string>; ctes: Set<string> } {
  const tables = new Set<string>();
  const functions = new Set<string>();
  const ctes = new Set<string>();
  const walk = (node: unknown): void => {
    if (Array.isArray(node)) return node.forEach(walk);
    if (!node || typeof node !== 'object') return;
    const o = node as Record<string, unknown>;
    if (o.type === 'BASE_TABLE' && typeof o.table_name === 'string') {
      if (o.schema_name || o.catalog_name) throw new ValidationError('Tables are workspace files: no schema names');
      tables.add(o.table_name);
    }
    if (o.type === 'TABLE_FUNCTION') {
      const fn = o.function as { function_name?: unknown } | undefined;
      functions.add(String(fn?.function_name ?? '')); // its arguments are walked below
    }
    const map = (o.cte_map as { map?: { key?: unknown }[] } | undefined)?.map;
    if (Array.isArray(map)) for (const m of map) if (typeof m.key === 'string') ctes.add(m.key);
    Object.values(o).forEach(walk);
  };
  walk(tree);
  return { tables, functions, ctes };
}

let running = 0;
const waiting: (() => void)[] = [];

async function slot(limits: QueryLimits): Promise<() => void> {
  if (running >= limits.concurrency) {
    if (waiting.length >= limits.concurrency * 4) throw new RateLimitedError(1);
    await new Promise<void>((resolve) => waiting.push(resolve));
  }
  running += 1;
  return () => {
    running -= 1;
    waiting.shift()?.();
  };
}

/** Engine errors worded for clients: DuckDB's first line (`Binder Error: …`, `Parser Error: …`). */
function engineError(err: unknown): Error {
  const message = err instanceof Error ? err.message : String(err);
  const first = message
    .split('\n')[0]!
    .replace(/^(Error: )+/, '')
    .slice(0, 1000);
  if (/^Out of Memory Error/i.test(first)) return new QueryLimitError(`The query exceeded its memory limit: ${first}`);
  if (/^Permission Error/i.test(first)) return new ValidationError(`The query may read workspace files only: ${first}`);
  return new ValidationError(`Query failed: ${first}`);
}

/** Parses with DuckDB (no binding) and checks it is one SELECT. @returns the syntax tree. */
async function parse(conn: DuckDBConnection, sql: string): Promise<unknown> {
  let extracted;
  try {
    extracted = await conn.extractStatements(sql);
  } catch (err) {
    throw engineError(err);
  }
  if (extracted.count !== 1) throw new ValidationError('Send exactly one SELECT statement');
  // Not prepared here: binding would already open the files it names (replacement scans), before the lock below.
  const reader = await conn.runAndReadAll('SELECT json_serialize_sql($1::VARCHAR)', [sql]);
  const tree = JSON.parse(String(reader.getRows()[0]![0])) as { error: boolean; error_message?: string };
  if (tree.error) {
    throw new ValidationError(
      /Only SELECT/i.test(tree.error_message ?? '')
        ? 'Only SELECT statements are allowed (the query is read-only)'
        : `Query failed: ${tree.error_message ?? 'it does not parse'}`
    );
  }
  return tree;
}

/**
 * Runs one read-only query.
 * @param sql the query.
 * @param resolveTable maps a table name to its local file (null: not a tabular file of the workspace).
 * @param limits rows, time, memory, concurrency.
 * @returns typed columns and rows.
 * @throws ValidationError (400) for anything but one SELECT over workspace files; QueryLimitError (422) past the
 * time or memory limit; RateLimitedError (429) when too many queries wait.
 */
export async function runReadOnlyQuery(
  sql: string,
  resolveTable: TableResolver,
  limits: QueryLimits
): Promise<QueryResult> {
  const release = await slot(limits);
  const instance = await DuckDBInstance.create(':memory:', {
    threads: '1',
    memory_limit: `${Math.floor(limits.memoryBytes / 1024 / 1024)}MB`,
    autoinstall_known_extensions: 'false',
    autoload_known_extensions: 'false',
  });
  const conn = await instance.connect();
  try {
    const tree = await parse(conn, sql);
    const { tables, functions, ctes } = tablesOf(tree);
    for (const fn of functions) {
      if (!GENERATORS.has(fn.toLowerCase()))
        throw new ValidationError(
          `Table function ${fn}() is not allowed: name a workspace file as a table, e.g. FROM 'data/sales.csv'`
        );
    }
    const files: string[] = [];
    const named: string[] = [];
    for (const name of tables) {
      if (ctes.has(name)) continue;
      const file = await resolveTable(name);
      const reader = readerFor(name);
      if (!file || !reader)
        throw new ValidationError(
          `Unknown table ${name}: name a CSV, JSON or Parquet file of the workspace by its path`
        );
      await conn
        .run(`CREATE VIEW ${quoteIdent(name)} AS SELECT * FROM ${reader}(${quoteString(file)})`)
        .catch((err) => {
          throw engineError(err);
        });
      files.push(file);
      named.push(name);
    }
    await conn.run(
      [
        `SET allowed_paths = [${files.map(quoteString).join(', ')}]`,
        'SET allowed_directories = []',
        "SET temp_directory = ''",
        'SET enable_external_access = false',
        'SET lock_configuration = true',
      ].join('; ')
    );
    return await execute(conn, sql, limits, named);
  } finally {
    conn.closeSync();
    instance.closeSync();
    release();
  }
}

async function execute(
  conn: DuckDBConnection,
  sql: string,
  limits: QueryLimits,
  tables: string[]
): Promise<QueryResult> {
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    conn.interrupt();
  }, limits.timeoutMs);
  try {
    const prepared = await conn.prepare(sql);
    if (prepared.statementType !== StatementType.SELECT)
      throw new ValidationError('Only SELECT statements are allowed (the query is read-only)');
    const result: DuckDBResult = await prepared.stream();
    const columns = result.columnNames().map((name, i) => ({ name, type: result.columnType(i).toString() }));
    const rows: Json[][] = [];
    let truncated = false;
    for (;;) {
      const chunk = await result.fetchChunk();
      if (!chunk || chunk.rowCount === 0) break;
      const chunkRows = chunk.convertRows(JsonDuckDBValueConverter) as Json[][];
      const room = limits.maxRows - rows.length;
      rows.push(...chunkRows.slice(0, room));
      if (chunkRows.length > room) {
        truncated = true;
        break;
      }
    }
    return { columns, rows, truncated, tables };
  } catch (err) {
    if (timedOut) throw new QueryLimitError(`The query exceeded its time limit of ${limits.timeoutMs} ms`);
    throw err instanceof AppError ? err : engineError(err);
  } finally {
    clearTimeout(timer);
  }
}
