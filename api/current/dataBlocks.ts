/**
 * Data blocks on the current surface [docs/decisions.md "Data blocks"]: read-only SQL over the workspace's CSV,
 * JSON and Parquet files, answered with typed columns.
 */
import { queryDataBlock } from '../../commands/dataBlocks';
import { filesDeps } from '../../commands/workspaceFiles';
import type { Config } from '../../lib/config';
import { input, type RouteSpec } from '../route';
import { idParams, record, requiredStr } from '../schemas';
import { resultSchema } from './dataBlocks.schema';

const tags = ['Data blocks'];

/** Longest accepted query text, in characters. */
export const MAX_SQL_LENGTH = 100_000;

/**
 * @param config caps, storage root and the query limits.
 * @returns the route declarations.
 */
export function dataBlockRoutes(config: Readonly<Config>): RouteSpec[] {
  const deps = filesDeps(config);
  return [
    {
      method: 'post',
      path: '/workspaces/:id/data-blocks/query',
      summary: "Run a read-only SQL query (one SELECT) over the workspace's CSV, JSON and Parquet files",
      tags,
      auth: 'service',
      scope: 'workspaces:read',
      params: idParams,
      body: record(
        {
          sql: requiredStr(MAX_SQL_LENGTH, {
            description: "One SELECT; tables are workspace files by path, e.g. SELECT * FROM 'data/sales.csv'",
          }),
          max_rows: {
            type: 'integer',
            minimum: 1,
            maximum: config.dataQuery.maxRows,
            description: `Most rows answered (default and maximum ${config.dataQuery.maxRows})`,
          },
        },
        ['max_rows']
      ),
      responses: { 200: record({ result: resultSchema }) },
      errors: [422],
      handler: async (ctx) => {
        const { params, body } = input<{ sql: string; max_rows?: number }, unknown, { id: string }>(ctx);
        const result = await queryDataBlock(deps, config.dataQuery, ctx.state.auth, params.id, {
          sql: body.sql,
          maxRows: body.max_rows,
        });
        ctx.body = {
          result: {
            columns: result.columns,
            rows: result.rows,
            row_count: result.rows.length,
            truncated: result.truncated,
            tables: result.tables,
          },
        };
      },
    },
  ];
}
