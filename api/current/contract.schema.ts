/** JSON Schemas of the contract routes: the OpenAPI document, the reference page's assets, SDK examples, version. */
import type { Schema } from '../../lib/ajv';
import { record } from '../schemas';
import { ASSET_NAMES } from './reference';

export const anyObject: Schema = { type: 'object' };
const url: Schema = { type: 'string', format: 'uri' };

export const assetParams = {
  type: 'object',
  required: ['name'],
  properties: { name: { type: 'string', enum: ASSET_NAMES } },
} as const;

export const sdkExamplesResponse = record({
  openapi: url,
  reference: url,
  generate: { type: 'array', items: record({ step: { type: 'string' }, command: { type: 'string' } }) },
  examples: {
    type: 'array',
    items: record({
      name: { type: 'string' },
      title: { type: 'string' },
      curl: { type: 'string' },
      typescript: { type: 'string' },
    }),
  },
});

export const versionResponse = record({
  name: { type: 'string' },
  version: { type: 'string' },
  apiVersions: { type: 'string' },
  gitCommit: { type: 'string' },
  builtAt: { type: 'string', format: 'date-time' },
  node: { type: 'string' },
  startedAt: { type: 'string', format: 'date-time' },
  contractHash: { type: 'string', pattern: '^[0-9a-f]{64}$' },
});
