/**
 * The contract (SPEC "Versioning"; api/openapi.ts): the OpenAPI 3.1 document validates with a maintained
 * validator, documents exactly the routes the app answers (no more, no fewer), and the public manifests point at
 * it. The app is the real one over real HTTP.
 */
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import path from 'node:path';
import type Router from '@koa/router';
import { RATE_LIMIT_HEADERS } from '../../api/openapi';
import { useTestApp } from '../helpers/app';
import { bearer, buildOrg } from '../helpers/factories';
import { useTestDatabase } from '../helpers/mongo';

useTestDatabase();
const t = useTestApp();

type Doc = {
  openapi: string;
  paths: Record<
    string,
    Record<string, { security?: unknown[]; parameters?: Array<{ $ref?: string }>; responses: Record<string, unknown> }>
  >;
};

async function getDocument(): Promise<{ doc: Doc; raw: string }> {
  const res = await t.request.get('/api/openapi.json');
  expect(res.status).toBe(200);
  expect(res.headers['content-type']).toMatch(/^application\/json/);
  return { doc: res.body as Doc, raw: res.text };
}

/** Every METHOD path the app's routers answer, in OpenAPI's path syntax. */
function registeredRoutes(): string[] {
  const out: string[] = [];
  for (const mw of t.app.middleware as Array<{ router?: Router }>) {
    for (const layer of mw.router?.stack ?? []) {
      for (const method of layer.methods) {
        if (method === 'HEAD') continue; // added by koa-router for every GET
        out.push(`${method} ${String(layer.path).replace(/[:*]([A-Za-z0-9_]+)/g, '{$1}')}`);
      }
    }
  }
  return out.sort();
}

function documentedRoutes(doc: Doc): string[] {
  return Object.entries(doc.paths)
    .flatMap(([path, ops]) => Object.keys(ops).map((m) => `${m.toUpperCase()} ${path}`))
    .sort();
}

describe('GET /api/openapi.json', () => {
  it('is a valid OpenAPI 3.1 document', async () => {
    const { doc } = await getDocument();
    expect(doc.openapi).toMatch(/^3\.1\./);
    // @seriousme/openapi-schema-validator is an ES module: it runs in its own node process.
    const run = spawnSync(process.execPath, [path.join(__dirname, '..', 'helpers', 'validateOpenApi.mjs')], {
      input: JSON.stringify(doc),
      encoding: 'utf8',
    });
    expect(run.stderr).toBe('');
    const result = JSON.parse(run.stdout) as { valid: boolean; errors: unknown[] };
    expect(result.errors).toEqual([]);
    expect(result.valid).toBe(true);
  });

  it('documents exactly the routes the app answers', async () => {
    const registered = registeredRoutes();
    expect(registered.length).toBeGreaterThan(20);
    expect(documentedRoutes((await getDocument()).doc)).toEqual(registered);
  });

  it('carries each route’s auth, its error envelope, and the events of its streams', async () => {
    const { doc } = await getDocument();
    const create = doc.paths['/api/v1/agents'].post;
    // Both surfaces also take the console's session cookie; the MCP endpoint does not.
    expect(create.security).toEqual([{ personalAccessToken: [] }, { consoleSession: [] }]);
    expect(doc.paths['/api/agents'].get.security).toEqual([{ serviceToken: ['agents:read'] }, { consoleSession: [] }]);
    expect(JSON.stringify(doc.paths['/mcp'].post.security)).not.toContain('consoleSession');
    expect(JSON.stringify(create.responses['401'])).toContain('#/components/schemas/V1Error');
    expect(doc.paths['/api/openapi.json'].get.security).toEqual([]);
    const stream = doc.paths['/api/v1/executions/{id}/stream'].get.responses['200'] as {
      content: Record<string, { 'x-events': Record<string, unknown> }>;
    };
    expect(Object.keys(stream.content['text/event-stream']['x-events'])).toEqual([
      'meta',
      'queued',
      'message',
      'result',
      'error',
      'expired',
    ]);
    const execute = doc.paths['/api/v1/agents/{id}/execute'].post.responses['200'] as { content: object };
    expect(Object.keys(execute.content)).toEqual(['application/json', 'text/event-stream']);
  });

  it('documents the rate-limit headers and Idempotency-Key exactly where the service applies them', async () => {
    const { doc } = await getDocument();
    const list = doc.paths['/api/agents'].get.responses['200'] as { headers: Record<string, unknown> };
    expect(Object.keys(list.headers).sort()).toEqual(['x-request-id', ...RATE_LIMIT_HEADERS].sort());
    const org = await buildOrg();
    const res = await t.request.get('/api/agents').set('authorization', bearer(org.serviceToken));
    expect(res.status).toBe(200);
    for (const h of RATE_LIMIT_HEADERS) expect(res.headers[h.toLowerCase()]).toBeDefined();
    const create = doc.paths['/api/agents'].post;
    expect(create.parameters).toContainEqual({ $ref: '#/components/parameters/IdempotencyKey' });
    expect(Object.keys(create.responses)).toEqual(expect.arrayContaining(['409', '422', '429']));
    const v1 = doc.paths['/api/v1/agents'].get.responses['200'] as { headers: Record<string, unknown> };
    expect(Object.keys(v1.headers)).toEqual(['x-request-id']);
  });

  it('documents uploads as raw bytes without Idempotency-Key, and the wildcard path of app files', async () => {
    const { doc } = await getDocument();
    const upload = doc.paths['/api/workspaces/{id}/files/content'].put as {
      requestBody: { content: Record<string, unknown> };
      parameters: unknown[];
      responses: Record<string, unknown>;
    };
    expect(Object.keys(upload.requestBody.content)).toEqual(['application/octet-stream']);
    expect(upload.parameters).not.toContainEqual({ $ref: '#/components/parameters/IdempotencyKey' });
    expect(Object.keys(upload.responses)).toEqual(expect.arrayContaining(['200', '201', '409', '413', '415']));
    const appFile = doc.paths['/api/apps/{token}/{path}'].get as unknown as {
      parameters: Array<{ name: string; in: string }>;
    };
    expect(appFile.parameters.map((p) => `${p.in}:${p.name}`)).toEqual(['path:token', 'path:path']);
    expect(Object.keys(doc.paths['/api/shares/{token}'].get.responses)).toContain('410');
  });

  it('is cacheable: an unchanged contract answers 304 to its ETag', async () => {
    const first = await t.request.get('/api/openapi.json');
    expect(first.headers['cache-control']).toMatch(/public/);
    const etag = first.headers.etag as string;
    expect(etag).toBeTruthy();
    expect((await t.request.get('/api/openapi.json').set('If-None-Match', etag)).status).toBe(304);
  });
});

describe('public manifests', () => {
  it('GET /api/version names the version, commit, build time and the hash of the document', async () => {
    const { raw } = await getDocument();
    const res = await t.request.get('/api/version');
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      name: 'agent-automation-service',
      version: expect.any(String),
      gitCommit: expect.stringMatching(/^[0-9a-f]{40}$/),
      builtAt: expect.any(String),
      contractHash: createHash('sha256').update(raw).digest('hex'),
    });
  });

  it('GET /api/agent-readiness describes auth, scopes, limits, the contract, MCP, webhooks and streams', async () => {
    const res = await t.request.get('/api/agent-readiness');
    expect(res.status).toBe(200);
    const base = t.config.appUrl;
    expect(res.body).toMatchObject({
      openapi: `${base}/api/openapi.json`,
      rateLimits: { current: { limit: 900, windowSeconds: 60 } },
      mcp: { endpoint: `${base}/mcp`, scope: 'mcp' },
      webhooks: { signatureHeader: 'Service-Signature' },
    });
    expect(res.body.auth.schemes.map((s: { tokenPrefix?: string }) => s.tokenPrefix)).toEqual([
      'td_',
      'svc_',
      undefined,
    ]);
    expect(res.body.auth.schemes[1].scopes).toContain('agents:read');
    // The v1 surface's groups, each with its paths (skills and missions among them).
    expect(res.body.v1.base).toBe(`${base}/api/v1`);
    expect(res.body.v1.groups.skills).toEqual([
      { path: '/api/v1/skills', methods: ['GET', 'POST'] },
      { path: '/api/v1/skills/{id}', methods: ['GET', 'PATCH', 'DELETE'] },
      { path: '/api/v1/skills/{id}/versions', methods: ['GET'] },
      { path: '/api/v1/skills/{id}/versions/{version}', methods: ['GET'] },
    ]);
    expect(res.body.v1.groups.missions).toEqual([
      { path: '/api/v1/missions', methods: ['GET', 'POST'] },
      { path: '/api/v1/missions/{id}', methods: ['GET', 'PATCH', 'DELETE'] },
      { path: '/api/v1/missions/{id}/backfill', methods: ['POST'] },
    ]);
    expect(res.body.v1.groups['mcp-servers']).toEqual([
      { path: '/api/v1/mcp-servers', methods: ['GET', 'POST'] },
      { path: '/api/v1/mcp-servers/{id}', methods: ['GET', 'PATCH', 'DELETE'] },
      { path: '/api/v1/mcp-servers/{id}/tools', methods: ['GET'] },
    ]);
    expect(Object.keys(res.body.v1.groups)).toEqual(
      expect.arrayContaining(['agents', 'executions', 'tasks', 'spaces', 'keys', 'profile'])
    );
    expect(res.body.streams).toContainEqual({
      method: 'GET',
      path: '/api/v1/executions/{id}/stream',
      events: ['meta', 'queued', 'message', 'result', 'error', 'expired'],
    });
  });

  it('GET /.well-known/service-agent-api points at the contract and the manifest', async () => {
    const res = await t.request.get('/.well-known/service-agent-api');
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      openapi: `${t.config.appUrl}/api/openapi.json`,
      agentReadiness: `${t.config.appUrl}/api/agent-readiness`,
    });
  });

  it('GET /.well-known/oauth-authorization-server has the RFC 8414 fields and the mcp scope', async () => {
    const res = await t.request.get('/.well-known/oauth-authorization-server');
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      issuer: t.config.appUrl,
      authorization_endpoint: `${t.config.appUrl}/oauth/authorize`,
      token_endpoint: `${t.config.appUrl}/oauth/token`,
      response_types_supported: ['code'],
      code_challenge_methods_supported: ['S256'],
    });
    expect(res.body.scopes_supported).toContain('mcp');
    expect(res.body.scopes_supported).not.toContain('*');
  });
});
