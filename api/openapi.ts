/**
 * The OpenAPI 3.1 document, generated at start-up from the route declarations (docs/architecture.md §4): the same
 * JSON Schemas the routes validate with, every declared status, the error envelope of each surface, the two bearer
 * schemes and the scope each route needs, and the event names and data of every text/event-stream response.
 * Nothing here is written by hand per route: a route added to a group is documented by being declared.
 */
import { webhookOperations } from './current/webhookEvents.schema';
import { createHash } from 'node:crypto';
import { STATUS_CODES } from 'node:http';
import { MCP_SCOPE, OAUTH_PATHS } from '../commands/oauth';
import type { Schema } from '../lib/ajv';
import { surfaceOf } from './context';
import { isIdempotent, isRateLimited, type RouteSpec, type SurfaceOptions } from './route';
import { sessionCookieName } from './sessionCookie';

/** Routes mounted under one prefix, with what their surface applies to them (rate limit, idempotency). */
export interface RouteGroup {
  prefix: string;
  routes: RouteSpec[];
  options?: SurfaceOptions;
}

export type OpenApiDocument = Record<string, unknown> & { paths: Record<string, Record<string, unknown>> };

/** Security scheme names in the document. */
export const SECURITY_SCHEMES = {
  v1: 'personalAccessToken',
  service: 'serviceToken',
  mcp: 'mcpOAuth',
  session: 'consoleSession',
  idToken: 'identityProviderIdToken',
} as const;

/** Response headers on current-surface routes that carry a token (SPEC "Limits"). */
export const RATE_LIMIT_HEADERS = [
  'X-RateLimit-Limit',
  'X-RateLimit-Remaining',
  'X-RateLimit-Reset',
  'RateLimit-Limit',
  'RateLimit-Remaining',
  'RateLimit-Reset',
  'RateLimit-Policy',
] as const;

const v1Error: Schema = {
  type: 'object',
  required: ['error', 'statusCode', 'statusMessage', 'message'],
  properties: {
    error: { const: true },
    statusCode: { type: 'integer' },
    statusMessage: { type: 'string' },
    message: { type: 'string' },
  },
};
const currentError: Schema = {
  type: 'object',
  required: ['error'],
  properties: {
    error: {
      type: 'object',
      required: ['code', 'message'],
      properties: {
        code: { type: 'string' },
        message: { type: 'string' },
        current_state: {
          type: 'string',
          description: 'With 409 `conflict` for an action that does not fit a job’s state: the job’s state',
        },
      },
    },
  },
};

/** The body the OAuth specifications fix (RFC 6749 §5.2): the authorization server's and the MCP endpoint's errors. */
const oauthError: Schema = {
  type: 'object',
  required: ['error'],
  properties: { error: { type: 'string' }, error_description: { type: 'string' } },
};

/** Annotations of ours that are not JSON Schema keywords (they must not reach the document). */
const PRIVATE_KEYWORDS = new Set(['sse', 'contentType']);

/**
 * Schemas named in a route schema's own `$defs` (recursive shapes): hoisted into `components.schemas`, because a
 * `#/$defs/...` reference inside the document would resolve against the document's root.
 */
let hoisted: Record<string, unknown> = {};

/** Copies a route schema for the document: our own annotations dropped, local `$defs` hoisted. */
function clean(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(clean);
  if (!schema || typeof schema !== 'object') return schema;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(schema)) {
    if (PRIVATE_KEYWORDS.has(k)) continue;
    if (k === '$defs') {
      for (const [name, def] of Object.entries(v as Record<string, unknown>)) {
        const copy = clean(def);
        if (name in hoisted && JSON.stringify(hoisted[name]) !== JSON.stringify(copy)) {
          throw new Error(`OpenAPI: two different schemas define $defs/${name}; rename one`);
        }
        hoisted[name] = copy;
      }
      continue;
    }
    if (k === '$ref' && typeof v === 'string' && v.startsWith('#/$defs/')) {
      out[k] = `#/components/schemas/${v.slice('#/$defs/'.length)}`;
      continue;
    }
    out[k] = clean(v);
  }
  return out;
}

/** `/agents/:id` → `/agents/{id}`; a wildcard `/*path` (the rest of the path, `/` included) → `/{path}`. */
export function openApiPath(prefix: string, path: string): string {
  const full = `${prefix}${path}` || '/';
  return full.replace(/[:*]([A-Za-z0-9_]+)/g, '{$1}');
}

function operationId(method: string, path: string): string {
  const words = path
    .replace(/[{}]/g, '')
    .split(/[^A-Za-z0-9]+/)
    .filter(Boolean)
    .map((w, i) => (i === 0 ? w : w[0].toUpperCase() + w.slice(1)));
  return `${method}${words.map((w) => w[0].toUpperCase() + w.slice(1)).join('')}`;
}

function parameters(route: RouteSpec): unknown[] {
  const out: unknown[] = [];
  for (const [where, schema] of [
    ['path', route.params],
    ['query', route.query],
  ] as const) {
    const props = (schema?.properties ?? {}) as Record<string, Schema>;
    const required = new Set((schema?.required as string[] | undefined) ?? []);
    for (const [name, prop] of Object.entries(props)) {
      out.push({
        name,
        in: where,
        required: where === 'path' || required.has(name),
        ...(typeof prop.description === 'string' ? { description: prop.description } : {}),
        schema: clean(prop),
      });
    }
  }
  return out;
}

function errorStatuses(route: RouteSpec): number[] {
  const out = new Set<number>([500, 503]);
  if (route.body || route.query || route.params) out.add(400);
  if (route.body || route.rawBody) [413, 415].forEach((s) => out.add(s));
  if (route.auth !== 'public') out.add(401);
  if (route.scope || route.auth !== 'public') out.add(403);
  if (route.params) out.add(404);
  for (const s of route.errors ?? []) out.add(s);
  return [...out].filter((s) => !(s in route.responses)).sort();
}

function eventStreamContent(route: RouteSpec): Record<string, unknown> {
  const events = route.events ?? {};
  return {
    'text/event-stream': {
      schema: {
        type: 'string',
        description:
          'Server-sent events: a `: connected` comment first, then `retry:`, `id:` (the event sequence, 1, 2, 3 …) on ' +
          'every event, `: heartbeat` comments; resume with `Last-Event-ID`. Events: ' +
          (Object.keys(events).join(', ') || 'see the description'),
      },
      'x-events': Object.fromEntries(Object.entries(events).map(([name, data]) => [name, { data: clean(data) }])),
    },
  };
}

/** The error body of each surface, by component name. */
const ERROR_SCHEMAS = { v1: 'V1Error', current: 'Error', oauth: 'OAuthError' } as const;

function security(group: RouteGroup, route: RouteSpec): unknown[] | undefined {
  const scopes = route.scope ? [route.scope] : [];
  // The console's session cookie stands in for a bearer token on both surfaces (api/sessionCookie.ts).
  const session = group.options?.session ? [{ [SECURITY_SCHEMES.session]: [] }] : [];
  switch (route.auth) {
    case 'public':
      return [];
    case 'v1':
      return [{ [SECURITY_SCHEMES.v1]: [] }, ...session];
    case 'service':
      return [{ [SECURITY_SCHEMES.service]: scopes }, ...session];
    case 'client':
      return [
        { [SECURITY_SCHEMES.service]: scopes },
        { [SECURITY_SCHEMES.v1]: [] },
        { [SECURITY_SCHEMES.idToken]: [] },
        ...session,
      ];
    case 'mcp':
      return [{ [SECURITY_SCHEMES.mcp]: scopes }, { [SECURITY_SCHEMES.service]: scopes }];
  }
}

/** The v1 surface's operations are grouped under their own tags (`v1 Agents`), apart from the current surface's. */
function operationTags(path: string, route: RouteSpec): string[] {
  return surfaceOf(path) === 'v1' ? route.tags.map((t) => `v1 ${t}`) : route.tags;
}

function operation(group: RouteGroup, route: RouteSpec): Record<string, unknown> {
  const path = openApiPath(group.prefix, route.path);
  const surface = surfaceOf(path);
  const errorRef = { $ref: `#/components/schemas/${ERROR_SCHEMAS[surface]}` };
  const requestIdHeader = { 'x-request-id': { $ref: '#/components/headers/RequestId' } };
  const limited = isRateLimited(route, group.options ?? {});
  const headers = {
    ...requestIdHeader,
    ...(limited ? Object.fromEntries(RATE_LIMIT_HEADERS.map((h) => [h, { $ref: `#/components/headers/${h}` }])) : {}),
  };
  const responses: Record<string, unknown> = {};
  for (const [status, schema] of Object.entries(route.responses)) {
    const description = (typeof schema.description === 'string' && schema.description) || STATUS_CODES[status];
    if (schema.noContent) {
      responses[status] = { description, headers };
      continue;
    }
    const content = schema.sse
      ? eventStreamContent(route)
      : {
          [(schema.contentType as string | undefined) ?? 'application/json']: {
            schema: clean(schema.contentType ? { type: 'string' } : schema),
          },
          ...(Number(status) === 200 && route.streams ? eventStreamContent(route) : {}),
        };
    responses[status] = { description, headers, content };
  }
  const statuses = errorStatuses(route);
  if (limited) statuses.push(429);
  if (isIdempotent(route, group.options ?? {})) statuses.push(409, 422);
  for (const status of [...new Set(statuses)].sort()) {
    responses[String(status)] = {
      description: STATUS_CODES[status],
      headers: {
        ...headers,
        ...(status === 429 || status === 503 ? { 'Retry-After': { $ref: '#/components/headers/Retry-After' } } : {}),
      },
      content: { 'application/json': { schema: errorRef } },
    };
  }
  const op: Record<string, unknown> = {
    operationId: operationId(route.method, path),
    summary: route.summary,
    tags: operationTags(path, route),
    security: security(group, route),
    parameters: parameters(route),
    responses,
  };
  if (route.scope) op['x-required-scope'] = route.scope;
  if (route.body) {
    op.requestBody = {
      required: !route.bodyOptional,
      content: { 'application/json': { schema: clean(route.body) } },
    };
  }
  if (route.rawBody) {
    op.requestBody = {
      required: true,
      description: route.rawBody.description,
      content: {
        [route.rawBody.contentType as string]: {
          // A form's parts (multipart/form-data) when the route names them; else the body is the file's bytes.
          schema: route.rawBody.schema ? clean(route.rawBody.schema as Schema) : { type: 'string', format: 'binary' },
        },
      },
    };
  }
  if (isIdempotent(route, group.options ?? {})) {
    (op.parameters as unknown[]).push({ $ref: '#/components/parameters/IdempotencyKey' });
  }
  return op;
}

/**
 * @param groups every mounted route group.
 * @param meta version and public address.
 * @returns the OpenAPI 3.1 document.
 */
export function buildOpenApi(groups: RouteGroup[], meta: { version: string; appUrl: string }): OpenApiDocument {
  const paths: Record<string, Record<string, unknown>> = {};
  const tags = new Set<string>();
  hoisted = {};
  for (const group of groups) {
    for (const route of group.routes) {
      const path = openApiPath(group.prefix, route.path);
      paths[path] ??= {};
      paths[path][route.method] = operation(group, route);
      operationTags(path, route).forEach((t) => tags.add(t));
    }
  }
  const base = meta.appUrl.replace(/\/+$/, '');
  const rateHeader = (description: string): Record<string, unknown> => ({
    description,
    schema: { type: 'string' },
  });
  return {
    openapi: '3.1.0',
    info: {
      title: 'Agent Automation Service',
      version: meta.version,
      description:
        'Two surfaces. The v1 surface (`/api/v1/...`, personal access tokens `td_...`) carries its version in its ' +
        'path. The current surface (`/api/...`, scoped service tokens `svc_...`) has no version prefix: this ' +
        'document is its contract, and `GET /api/version` names the deployed version and the hash of this document.',
    },
    servers: [{ url: meta.appUrl }],
    tags: [...tags].sort().map((name) => ({ name })),
    paths,
    webhooks: webhookOperations(),
    components: {
      schemas: { V1Error: v1Error, Error: currentError, OAuthError: oauthError, ...hoisted },
      securitySchemes: {
        [SECURITY_SCHEMES.v1]: {
          type: 'http',
          scheme: 'bearer',
          bearerFormat: 'td_...',
          description: 'v1 surface: a personal access token (`td_...`) acting as its user.',
        },
        [SECURITY_SCHEMES.service]: {
          type: 'http',
          scheme: 'bearer',
          bearerFormat: 'svc_...',
          description:
            'Current surface: a service token (`svc_...`) with scopes; each operation lists the scope it needs ' +
            '(`*` grants every scope).',
        },
        [SECURITY_SCHEMES.session]: {
          type: 'apiKey',
          in: 'cookie',
          name: sessionCookieName(meta.appUrl),
          description:
            'The console’s session cookie, set by `POST /api/session` (sign-in with a personal access token): acts ' +
            'as that token’s user on both surfaces when a request has no `Authorization` header. A request that ' +
            'changes something (not GET, HEAD or OPTIONS) must also carry an `Origin` header naming this service ' +
            '(CSRF check; 403 otherwise).',
        },
        [SECURITY_SCHEMES.idToken]: {
          type: 'http',
          scheme: 'bearer',
          bearerFormat: 'JWT',
          description:
            'The client-library endpoints: an OpenID Connect ID token of a configured identity provider (OIDC_ISSUERS), ' +
            'mapped to a member by an identity link or by its verified email in a verified domain (docs/identity.md); ' +
            '401 `id_token_expired`, `id_token_audience`, `id_token_issuer`, `id_token_unknown_key`, `id_token_invalid` ' +
            'or `identity_unmapped` when refused.',
        },
        [SECURITY_SCHEMES.mcp]: {
          type: 'oauth2',
          description:
            'The MCP endpoint: an access token of the service’s OAuth 2.1 authorization server (audience the MCP ' +
            'endpoint, scope `mcp`), or a service token with scope `mcp` or `*`.',
          flows: {
            authorizationCode: {
              authorizationUrl: `${base}${OAUTH_PATHS.authorize}`,
              tokenUrl: `${base}${OAUTH_PATHS.token}`,
              refreshUrl: `${base}${OAUTH_PATHS.token}`,
              scopes: { [MCP_SCOPE]: 'Use the MCP endpoint' },
            },
            clientCredentials: {
              tokenUrl: `${base}${OAUTH_PATHS.token}`,
              scopes: { [MCP_SCOPE]: 'Use the MCP endpoint' },
            },
          },
        },
      },
      headers: {
        RequestId: { description: 'The request id (an incoming `x-request-id` is kept).', schema: { type: 'string' } },
        'Retry-After': { description: 'Seconds to wait before retrying.', schema: { type: 'integer' } },
        'X-RateLimit-Limit': rateHeader('Requests allowed in the window.'),
        'X-RateLimit-Remaining': rateHeader('Requests left in the window.'),
        'X-RateLimit-Reset': rateHeader('Unix time (seconds) when the window resets.'),
        'RateLimit-Limit': rateHeader('Requests allowed in the window.'),
        'RateLimit-Remaining': rateHeader('Requests left in the window.'),
        'RateLimit-Reset': rateHeader('Seconds until the window resets.'),
        'RateLimit-Policy': rateHeader('`<limit>;w=<window seconds>`, e.g. `900;w=60`.'),
      },
      parameters: {
        IdempotencyKey: {
          name: 'Idempotency-Key',
          in: 'header',
          required: false,
          description: 'A repeated key with the same body replays the first answer (`Idempotent-Replayed: true`).',
          schema: { type: 'string', maxLength: 255 },
        },
      },
    },
  };
}

/**
 * @param doc the document.
 * @returns a SHA-256 of its canonical JSON (keys as generated), the contract's identity in /api/version.
 */
export function contractHash(doc: OpenApiDocument): string {
  return createHash('sha256').update(JSON.stringify(doc)).digest('hex');
}
