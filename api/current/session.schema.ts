/** JSON Schemas of /api/session (the console's sign-in; docs/decisions.md "Console sessions"). */
import type { Schema } from '../../lib/ajv';
import { nullableStr, record, requiredStr, timestamp } from '../schemas';

export const signInBody = {
  type: 'object',
  additionalProperties: false,
  required: ['token'],
  properties: {
    token: requiredStr(200, { description: 'A personal access token (`td_…`); never stored, never sent back' }),
  },
} as const;

export const sessionResponse: Schema = {
  ...record({
    user: record({ id: { type: 'string' }, email: { type: 'string' }, name: nullableStr }),
    organization: record({ id: { type: 'string' }, name: { type: 'string' } }),
    expiresAt: { ...timestamp, description: 'The absolute end of the session (SESSION_MAX_AGE after sign-in)' },
    idleExpiresAt: {
      ...timestamp,
      description:
        'When the session ends if no request uses it meanwhile (SESSION_IDLE_TIMEOUT after its last recorded use; at most expiresAt)',
    },
  }),
  description:
    'The signed-in person and organization. Sign-in also sets the session cookie (`__Host-aas_session` when APP_URL is https, else `aas_session`; HttpOnly, SameSite=Strict, Path=/)',
};

export const signedOutResponse: Schema = {
  noContent: true,
  description: 'Signed out: the session is ended and the cookie cleared (also when there was no live session)',
};

export const ssoResponse: Schema = {
  ...record({
    enabled: { type: 'boolean', description: 'Whether the console offers "Sign in with SSO" (OIDC_CONSOLE_ISSUER)' },
    issuer: { ...nullableStr, description: 'The identity provider it signs in with, or null' },
    startUrl: { ...nullableStr, description: 'Where the sign-in page sends the browser to start it, or null' },
  }),
  description: 'Whether "Sign in with SSO" is offered, and through which identity provider',
};

export const ssoStartQuery = {
  type: 'object',
  additionalProperties: false,
  properties: {
    next: { type: 'string', maxLength: 2000, description: 'The console path to land on once signed in' },
  },
} as const;

export const ssoCallbackQuery = {
  type: 'object',
  additionalProperties: true,
  properties: {
    code: { type: 'string', maxLength: 4096 },
    state: { type: 'string', maxLength: 200 },
    iss: { type: 'string', maxLength: 2000 },
    error: { type: 'string', maxLength: 200 },
    error_description: { type: 'string', maxLength: 2000 },
  },
} as const;
