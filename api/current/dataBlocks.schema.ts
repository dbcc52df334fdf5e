/** JSON Schemas of the current surface's data-block queries. */
import type { Schema } from '../../lib/ajv';
import { record, requiredStr } from '../schemas';

/** Longest accepted query text, in characters. */
export const MAX_SQL_LENGTH = 100_000;

/**
 * @param maxRows the most rows a query answers (configuration).
 * @returns the body of a query.
 */
export const queryBody = (maxRows: number) =>
  record(
    {
      sql: requiredStr(MAX_SQL_LENGTH, {
        description: "One SELECT; tables are workspace files by path, e.g. SELECT * FROM 'data/sales.csv'",
      }),
      max_rows: {
        type: 'integer',
        minimum: 1,
        maximum: maxRows,
        description: `Most rows answered (default and maximum ${maxRows})`,
      },
    },
    ['max_rows']
  );

export const resultSchema: Schema = record({
  columns: {
    type: 'array',
    items: record({ name: { type: 'string' }, type: { type: 'string', description: 'DuckDB type name' } }),
  },
  rows: {
    type: 'array',
    description: 'Rows as arrays in column order (64-bit integers and decimals as strings)',
    items: { type: 'array', items: {} },
  },
  row_count: { type: 'integer' },
  truncated: { type: 'boolean', description: 'More rows were available than `max_rows`' },
  tables: { type: 'array', items: { type: 'string' }, description: 'The workspace files the query read' },
});

export const queryResponse = record({ result: resultSchema });
