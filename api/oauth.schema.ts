/** JSON Schemas of the OAuth authorization server's endpoints (api/oauth.ts). */
import { OAUTH_CLIENT_AUTH_METHODS, OAUTH_GRANT_TYPES } from '../commands/oauth';
import type { Schema } from '../lib/ajv';
import { httpUrl, record, str } from './schemas';

/** The authorization request's parameters, carried from the consent page's GET to its POST. */
export const AUTHORIZE_PARAMS = [
  'response_type',
  'client_id',
  'redirect_uri',
  'scope',
  'state',
  'code_challenge',
  'code_challenge_method',
  'resource',
] as const;

export const authorizeQuery: Schema = {
  type: 'object',
  // redirect_uri: http(s) only, like every URL field (registration accepts nothing else either).
  properties: Object.fromEntries(AUTHORIZE_PARAMS.map((k) => [k, k === 'redirect_uri' ? httpUrl(2000) : str(2000)])),
};

export const registrationBody = {
  type: 'object',
  properties: {
    redirect_uris: { type: 'array', maxItems: 10, items: str(2000) },
    grant_types: { type: 'array', maxItems: 3, items: { type: 'string', enum: [...OAUTH_GRANT_TYPES] } },
    response_types: { type: 'array', maxItems: 3, items: str(50) },
    token_endpoint_auth_method: { type: 'string', enum: [...OAUTH_CLIENT_AUTH_METHODS] },
    client_name: str(200),
    scope: str(200),
  },
} as const;

export const registrationResponse: Schema = {
  type: 'object',
  required: ['client_id', 'grant_types', 'token_endpoint_auth_method'],
  properties: {
    client_id: { type: 'string' },
    client_secret: { type: 'string' },
    client_secret_expires_at: { type: 'integer' },
    client_id_issued_at: { type: 'integer' },
    client_name: { type: 'string' },
    redirect_uris: { type: 'array', items: { type: 'string' } },
    grant_types: { type: 'array', items: { type: 'string' } },
    response_types: { type: 'array', items: { type: 'string' } },
    token_endpoint_auth_method: { type: 'string' },
    scope: { type: 'string' },
  },
};

export const tokenResponse: Schema = record(
  {
    access_token: { type: 'string' },
    token_type: { const: 'Bearer' },
    expires_in: { type: 'integer' },
    scope: { type: 'string' },
    refresh_token: { type: 'string' },
  },
  ['refresh_token']
);

export const revocationResponse: Schema = { type: 'object' };
