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
 *    rows, `maxBytes` bytes of JSON, are read from its result stream, row by row.
 * This module runs only in a query process (lib/dataQueryProcess.ts), never in the api: lib/dataQuery.ts queues the
 * queries and hands them to those processes.
 */
import {
  DuckDBInstance,
  JsonDuckDBValueConverter,
  StatementType,
  type DuckDBConnection,
  type DuckDBResult,
  type Json,
} from '@duckdb/node-api';
import { readerFor, type QueryLimits, type QueryResult, type TableResolver } from './dataQuery';
import { AppError, QueryLimitError, ValidationError } from './errors';

/** Table functions that read nothing outside the query itself. */
const GENERATORS = new Set(['range', 'generate_series', 'unnest']);

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
 * @param limits rows, bytes, time, memory.
 * @returns typed columns and rows.
 * @throws ValidationError (400) for anything but one SELECT over workspace files; QueryLimitError (422) past the
 * time, bytes or memory limit.
 */
export async function runReadOnlyQuery(
  sql: string,
  resolveTable: TableResolver,
  limits: QueryLimits
): Promise<QueryResult> {
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
    let bytes = 0;
    read: for (;;) {
      const chunk = await result.fetchChunk();
      if (!chunk || chunk.rowCount === 0) break;
      // Row by row, so that the byte cap stops a result of huge values at its first row over the cap.
      for (let r = 0; r < chunk.rowCount; r += 1) {
        if (rows.length === limits.maxRows) {
          truncated = true;
          break read;
        }
        const row = chunk.convertRowValues(r, JsonDuckDBValueConverter) as Json[];
        bytes += Buffer.byteLength(JSON.stringify(row)) + 1;
        if (bytes > limits.maxBytes)
          throw new QueryLimitError(
            `The query's result exceeded its limit of ${limits.maxBytes} bytes: select fewer rows or columns`
          );
        rows.push(row);
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
