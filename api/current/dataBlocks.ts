/**
 * Data blocks on the current surface [docs/decisions.md "Data blocks"]: read-only SQL over the workspace's CSV,
 * JSON and Parquet files, answered with typed columns.
 */
import { queryDataBlock } from '../../commands/dataBlocks';
import { filesDeps } from '../../commands/workspaceFiles';
import type { Config } from '../../lib/config';
import { clientGone } from '../executionReply';
import { route, type RouteSpec } from '../route';
import { idParams } from '../schemas';
import { queryBody, queryResponse } from './dataBlocks.schema';

const tags = ['Data blocks'];

/**
 * @param config caps, storage root and the query limits.
 * @returns the route declarations.
 */
export function dataBlockRoutes(config: Readonly<Config>): RouteSpec[] {
  const deps = filesDeps(config);
  return [
    route({
      method: 'post',
      path: '/workspaces/:id/data-blocks/query',
      summary: "Run a read-only SQL query (one SELECT) over the workspace's CSV, JSON and Parquet files",
      tags,
      auth: 'service',
      scope: 'workspaces:read',
      params: idParams,
      body: queryBody(config.dataQuery.maxRows),
      responses: { 200: queryResponse },
      errors: [422, 503],
      handler: async (ctx, { params, body }) => {
        const result = await queryDataBlock(
          deps,
          config.dataQuery,
          ctx.state.auth,
          params.id,
          { sql: body.sql, maxRows: body.max_rows },
          clientGone(ctx)
        );
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
    }),
  ];
}
