/**
 * The public contract endpoints (SPEC "current surface", public): the OpenAPI document, the interactive reference,
 * client examples, the readiness manifest, version metadata, and the two well-known documents. All public and
 * cacheable: the document-derived answers carry the contract hash as their ETag.
 */
import {
  authorizationServerMetadata,
  MCP_SCOPE,
  mcpResourceUrl,
  OAUTH_PATHS,
  protectedResourceMetadata,
} from '../../commands/oauth';
import type { Config } from '../../lib/config';
import { buildInfo } from '../../lib/version';
import { SCOPES } from '../../models';
import type { AppContext } from '../context';
import { RATE_LIMIT_HEADERS, type OpenApiDocument } from '../openapi';
import { route, type RouteSpec } from '../route';
import { anyObject, assetParams, sdkExamplesResponse, versionResponse } from './contract.schema';
import { serveAsset, servePage } from './reference';
import { sdkExamples } from './sdkExamples';

/** The document and its hash, known once every route is declared. */
export interface Contract {
  document: OpenApiDocument;
  hash: string;
}

/** How long clients and proxies may keep the public documents. */
const CACHE = 'public, max-age=300';

/** Answers 304 when the client has this contract's version, else sets the caching headers. */
function cacheable(ctx: AppContext, contract: Contract): boolean {
  ctx.set('Cache-Control', CACHE);
  ctx.etag = contract.hash;
  ctx.status = 200;
  if (ctx.fresh) {
    ctx.status = 304;
    return true;
  }
  return false;
}

/**
 * @param config the public address and commit.
 * @param contract the document (read at request time: it covers these routes too).
 * @returns the `/api` routes.
 */
export function contractRoutes(config: Readonly<Config>, contract: () => Contract): RouteSpec[] {
  const base = config.appUrl.replace(/\/+$/, '');
  const tags = ['Contract'];
  return [
    route({
      method: 'get',
      path: '/openapi.json',
      summary: 'The OpenAPI 3.1 contract of both surfaces',
      tags,
      auth: 'public',
      responses: { 200: anyObject },
      handler: (ctx) => {
        const c = contract();
        if (!cacheable(ctx, c)) ctx.body = c.document;
      },
    }),
    route({
      method: 'get',
      path: '/reference',
      summary: 'Interactive reference rendered from the contract (works offline)',
      tags,
      auth: 'public',
      responses: { 200: { contentType: 'text/html', description: 'The reference page' } },
      handler: servePage,
    }),
    route({
      method: 'get',
      path: '/reference/assets/:name',
      summary: 'Assets of the reference page',
      tags,
      auth: 'public',
      params: assetParams,
      responses: { 200: { contentType: 'application/octet-stream', description: 'The asset' } },
      handler: (ctx, { params }) => serveAsset(ctx, params.name),
    }),
    route({
      method: 'get',
      path: '/sdk-examples',
      summary: 'How to generate a typed client, with curl and TypeScript examples',
      tags,
      auth: 'public',
      responses: { 200: sdkExamplesResponse },
      handler: (ctx) => {
        if (cacheable(ctx, contract())) return;
        ctx.body = { openapi: `${base}/api/openapi.json`, reference: `${base}/api/reference`, ...sdkExamples(base) };
      },
    }),
    route({
      method: 'get',
      path: '/agent-readiness',
      summary: 'Machine-readable manifest: auth, scopes, rate limits, contract, v1 groups, MCP, webhooks, streams',
      tags,
      auth: 'public',
      responses: { 200: anyObject },
      handler: (ctx) => {
        const c = contract();
        if (cacheable(ctx, c)) return;
        ctx.body = readinessManifest(base, c, config);
      },
    }),
    route({
      method: 'get',
      path: '/version',
      summary: 'Deployed version metadata: version, git commit, build time, contract hash',
      tags: ['Meta'],
      auth: 'public',
      responses: { 200: versionResponse },
      handler: (ctx) => {
        ctx.set('Cache-Control', 'no-cache');
        ctx.body = { ...buildInfo(config.gitCommit), contractHash: contract().hash };
      },
    }),
  ];
}

/**
 * @param config the public address.
 * @param contract the document.
 * @returns the routes outside `/api` (mounted at the root).
 */
export function wellKnownRoutes(config: Readonly<Config>, contract: () => Contract): RouteSpec[] {
  const base = config.appUrl.replace(/\/+$/, '');
  const tags = ['Contract'];
  return [
    route({
      method: 'get',
      path: '/.well-known/service-agent-api',
      summary: 'Well-known manifest pointing at the contract and the readiness manifest',
      tags,
      auth: 'public',
      responses: { 200: anyObject },
      handler: (ctx) => {
        if (cacheable(ctx, contract())) return;
        ctx.body = {
          name: buildInfo(config.gitCommit).name,
          openapi: `${base}/api/openapi.json`,
          agentReadiness: `${base}/api/agent-readiness`,
          reference: `${base}/api/reference`,
          sdkExamples: `${base}/api/sdk-examples`,
          version: `${base}/api/version`,
          oauthAuthorizationServer: `${base}${OAUTH_PATHS.metadata}`,
          oauthProtectedResource: `${base}${OAUTH_PATHS.protectedResource}`,
        };
      },
    }),
    route({
      method: 'get',
      path: OAUTH_PATHS.metadata,
      summary: 'OAuth 2.1 authorization server metadata (RFC 8414) for MCP clients',
      tags,
      auth: 'public',
      responses: { 200: anyObject },
      handler: (ctx) => {
        if (cacheable(ctx, contract())) return;
        ctx.body = authorizationServerMetadata(base);
      },
    }),
    route({
      method: 'get',
      path: OAUTH_PATHS.protectedResource,
      summary: 'OAuth protected-resource metadata (RFC 9728) of the MCP endpoint: its authorization server, scope',
      tags,
      auth: 'public',
      responses: { 200: anyObject },
      handler: (ctx) => {
        if (cacheable(ctx, contract())) return;
        ctx.body = protectedResourceMetadata(base);
      },
    }),
  ];
}

/**
 * @param base the public address.
 * @param contract the document (its streams are read from it).
 * @param config the default request budget.
 * @returns the readiness manifest.
 */
function readinessManifest(base: string, contract: Contract, config: Readonly<Config>): Record<string, unknown> {
  const streams: Array<Record<string, unknown>> = [];
  // The v1 surface's groups (agents, skills, missions, …), each with its paths and their methods, from the document.
  const v1Groups: Record<string, Array<{ path: string; methods: string[] }>> = {};
  for (const [path, ops] of Object.entries(contract.document.paths)) {
    const group = /^\/api\/v1\/([^/]+)/.exec(path)?.[1];
    if (group) (v1Groups[group] ??= []).push({ path, methods: Object.keys(ops).map((m) => m.toUpperCase()) });
  }
  for (const [path, ops] of Object.entries(contract.document.paths)) {
    for (const [method, op] of Object.entries(ops) as Array<[string, Record<string, unknown>]>) {
      const ok = (op.responses as Record<string, { content?: Record<string, { 'x-events'?: object }> }>)['200'];
      const sse = ok?.content?.['text/event-stream'];
      if (sse) streams.push({ method: method.toUpperCase(), path, events: Object.keys(sse['x-events'] ?? {}) });
    }
  }
  return {
    service: 'Agent Automation Service',
    contractHash: contract.hash,
    openapi: `${base}/api/openapi.json`,
    reference: `${base}/api/reference`,
    sdkExamples: `${base}/api/sdk-examples`,
    auth: {
      schemes: [
        { surface: 'v1', paths: '/api/v1/*', type: 'http', scheme: 'bearer', tokenPrefix: 'td_' },
        {
          surface: 'current',
          paths: '/api/*',
          type: 'http',
          scheme: 'bearer',
          tokenPrefix: 'svc_',
          scopes: SCOPES,
          note: '`*` grants every scope; each operation of the OpenAPI document names the scope it needs',
        },
        {
          surface: 'mcp',
          type: 'oauth2',
          metadata: `${base}${OAUTH_PATHS.metadata}`,
          protectedResourceMetadata: `${base}${OAUTH_PATHS.protectedResource}`,
          resource: mcpResourceUrl(base),
          scope: MCP_SCOPE,
          note: 'a service token with scope mcp (or *) is accepted too',
        },
      ],
    },
    rateLimits: {
      current: {
        limit: config.rateLimitRequests,
        windowSeconds: config.rateLimitWindowSeconds,
        scope: 'per authenticated identity (an identity may have its own limit)',
        headers: RATE_LIMIT_HEADERS,
      },
      v1: 'not enforced',
    },
    v1: { base: `${base}/api/v1`, groups: v1Groups },
    idempotency: { header: 'Idempotency-Key', maxLength: 255, retentionHours: 24 },
    mcp: { endpoint: `${base}/mcp`, transport: 'streamable-http', scope: MCP_SCOPE },
    webhooks: {
      signatureHeader: 'Service-Signature',
      format: 't=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<raw body>">',
    },
    streams,
  };
}
