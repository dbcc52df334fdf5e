/**
 * Data blocks [docs/decisions.md "Data blocks"]: read-only SQL over the tabular files (CSV, TSV, JSON, NDJSON,
 * Parquet) of a workspace. A table is a file named by its workspace path (`SELECT … FROM 'data/sales.csv'`); the
 * path rules of lib/workspace.ts apply to it, and the engine (lib/dataQuery.ts) may open those files only.
 */
import type { AuthContext } from './tokens';
import { findWorkspace, type FilesDeps } from './workspaceFiles';
import type { Config } from '../lib/config';
import { readerFor, runReadOnlyQuery, type QueryResult } from '../lib/dataQuery';
import { NotFoundError, ValidationError } from '../lib/errors';
import { outsideRequestDeadline } from '../lib/requestDeadline';
import { parseWorkspacePath } from '../lib/workspace';

/**
 * @param deps storage.
 * @param limits lib/config.ts `dataQuery` (rows, bytes, time, memory, concurrency).
 * @param auth the caller.
 * @param id workspace id.
 * @param query the SQL and an optional smaller row limit.
 * @param signal aborted when the client goes away: the query is dropped or its process killed (lib/dataQuery.ts).
 * @returns typed columns, rows, whether rows were left out, and the files read.
 */
export async function queryDataBlock(
  deps: FilesDeps,
  limits: Config['dataQuery'],
  auth: AuthContext,
  id: string,
  query: { sql: string; maxRows?: number },
  signal?: AbortSignal
): Promise<QueryResult> {
  const { ws } = await findWorkspace(auth, id);
  const resolve = async (name: string): Promise<string | null> => {
    if (!readerFor(name)) return null;
    let rel: string;
    try {
      rel = parseWorkspacePath(name);
    } catch (err) {
      if (err instanceof ValidationError) throw new ValidationError(`Table ${name}: ${err.message}`);
      throw err;
    }
    try {
      return await deps.storage.localPath(ws, rel);
    } catch (err) {
      if (err instanceof NotFoundError) return null;
      throw err;
    }
  };
  // Bounded by its own timeout (DATA_QUERY_TIMEOUT_MS): the request's deadline does not measure it.
  return outsideRequestDeadline(() =>
    runReadOnlyQuery(
      query.sql,
      resolve,
      { ...limits, maxRows: Math.min(query.maxRows ?? limits.maxRows, limits.maxRows) },
      auth.organizationId,
      signal
    )
  );
}
