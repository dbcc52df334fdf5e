/**
 * The console served by the service (api/console.ts), over real HTTP: `/` and every console path (the chatUrl form
 * among them) answer the built index.html with the security headers; hashed assets are cached long and sent
 * compressed; every path of the service's own routes keeps its meaning (its 404 stays JSON); without a build, a page
 * that says how to build it.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createTestApp, useTestApp } from '../helpers/app';
import { useTestDatabase } from '../helpers/mongo';
import { closeAfterAll } from '../helpers/teardown';

useTestDatabase();
const t = useTestApp();

beforeAll(() => {
  if (process.env.AAS_TEST_CONSOLE_MISSING) throw new Error(process.env.AAS_TEST_CONSOLE_MISSING);
});

/** @returns the script-src directive of a policy. */
const scriptSrc = (csp: string): string =>
  csp
    .split(';')
    .map((d) => d.trim())
    .find((d) => d.startsWith('script-src')) ?? '';

function expectConsoleHeaders(res: { headers: Record<string, string> }): void {
  const csp = res.headers['content-security-policy'];
  expect(csp).toContain("frame-ancestors 'none'");
  expect(csp).toContain("default-src 'self'");
  expect(scriptSrc(csp)).toBe("script-src 'self'");
  expect(csp).not.toContain('unsafe-eval');
  expect(res.headers['x-content-type-options']).toBe('nosniff');
  expect(res.headers['referrer-policy']).toBe('strict-origin-when-cross-origin');
}

it('answers the app at / and at every console path, never cached, with the security headers', async () => {
  const index = readFileSync(path.join(t.config.consoleDir, 'index.html'), 'utf8');
  for (const p of ['/', '/sign-in', '/chats', '/org_1/spaces/spc_2/chats/chat_3', '/anything/else?x=1']) {
    const res = await t.request.get(p);
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(res.headers['cache-control']).toBe('no-cache');
    expectConsoleHeaders(res);
    expect(res.text).toBe(index);
    expect(res.text).toContain('<div id="root"></div>');
    // No inline script: the policy would refuse it.
    expect(res.text).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/);
  }
  const head = await t.request.head('/org_1/spaces/spc_2/chats/chat_3');
  expect(head.status).toBe(200);
  expect(head.headers['content-type']).toBe('text/html; charset=utf-8');
  expect(head.text ?? '').toBe('');
  // Revalidated: the same build answers 304.
  const first = await t.request.get('/');
  const again = await t.request.get('/').set('If-None-Match', first.headers.etag);
  expect(again.status).toBe(304);
});

it('sends hashed assets compressed and cached for a year; an unknown one is a 404', async () => {
  const index = (await t.request.get('/')).text;
  const script = /<script[^>]*src="(\/assets\/[^"]+\.js)"/.exec(index)![1];
  const plain = await t.request.get(script).set('Accept-Encoding', 'identity');
  expect(plain.status).toBe(200);
  expect(plain.headers['content-type']).toBe('text/javascript; charset=utf-8');
  expect(plain.headers['cache-control']).toBe('public, max-age=31536000, immutable');
  expect(plain.headers['content-encoding']).toBeUndefined();
  expectConsoleHeaders(plain);
  const file = readFileSync(path.join(t.config.consoleDir, script));
  expect(Buffer.from(plain.text)).toEqual(file);
  for (const encoding of ['br', 'gzip']) {
    const res = await t.request.get(script).set('Accept-Encoding', encoding);
    expect(res.status).toBe(200);
    expect(res.headers['content-encoding']).toBe(encoding);
    expect(Number(res.headers['content-length'])).toBeLessThan(file.length);
    expect(res.text).toBe(file.toString('utf8')); // supertest decodes it
  }
  const missing = await t.request.get('/assets/nothing-here.js');
  expect(missing.status).toBe(404);
  expect(missing.headers['content-type']).toMatch(/^application\/json/);
});

it('leaves every path of the service’s own routes to them: their answers and their JSON 404s', async () => {
  const v1 = await t.request.get('/api/v1/no-such-route');
  expect(v1.status).toBe(404);
  expect(v1.body).toMatchObject({ error: true, statusCode: 404 });
  for (const p of ['/api/no-such-route', '/.well-known/no-such', '/oauth/no-such', '/mcp-app/no-such', '/codec/x']) {
    const res = await t.request.get(p);
    expect(res.status).toBe(404);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    expect(res.headers['content-security-policy'] ?? '').not.toBe(
      (await t.request.get('/')).headers['content-security-policy']
    );
  }
  const health = await t.request.get('/healthz');
  expect(health.status).toBe(200);
  expect(health.headers['content-type']).toMatch(/^application\/json/);
  const doc = await t.request.get('/api/openapi.json');
  expect(doc.status).toBe(200);
  expect(doc.body.openapi).toBe('3.1.0');
  const metadata = await t.request.get('/.well-known/oauth-authorization-server');
  expect(metadata.status).toBe(200);
  for (const p of ['/mcp', '/metrics', '/readyz']) {
    const res = await t.request.get(p);
    expect(res.headers['content-type'] ?? '').not.toMatch(/text\/html/);
  }
  // Only GET and HEAD reach the console.
  const post = await t.request.post('/org_1/spaces/spc_2/chats/chat_3').send({});
  expect(post.status).toBe(404);
  expect(post.headers['content-type']).toMatch(/^application\/json/);
});

describe('without a build', () => {
  const empty = mkdtempSync(path.join(os.tmpdir(), 'aas-console-'));
  const bare = createTestApp({ CONSOLE_DIR: empty });
  closeAfterAll(async () => {
    await bare.close();
    rmSync(empty, { recursive: true, force: true });
  });

  it('says how to build the console, and the API still answers', async () => {
    const res = await bare.request.get('/org_1/spaces/spc_2/chats/chat_3');
    expect(res.status).toBe(503);
    expect(res.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(res.text).toContain('The console is not built');
    expect(res.text).toContain('npm run build');
    expectConsoleHeaders(res);
    expect((await bare.request.get('/healthz')).status).toBe(200);
  });
});
