/** JSON Schemas of the current surface's data-block queries. */
import type { Schema } from '../../lib/ajv';
import { record } from '../schemas';

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
