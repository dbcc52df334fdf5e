/**
 * Public links into a workspace over real HTTP: file shares (create, fetch without a token, expiry, revoke) and
 * workspace apps (a static site from a folder: index, assets, no listing, CSP, path rules, revoke); and the size
 * caps of uploads (per file, per workspace; 413, nothing kept), on an app configured with small caps.
 */
import http from 'node:http';
import { mkdirSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { WorkspaceLink } from '../../../models';
import { useTestApp, type TestApp } from '../../helpers/app';
import { currentAs, currentError } from '../../helpers/current';
import { bearer, buildOrg, buildWorkspace } from '../../helpers/factories';
import { useTestDatabase } from '../../helpers/mongo';
import { v1As } from '../../helpers/v1';

useTestDatabase();
const t = useTestApp();
const small = useTestApp({ WORKSPACE_FILE_MAX_BYTES: '100', WORKSPACE_MAX_BYTES: '250' });

async function workspace(app: TestApp = t) {
  const { org, id, dir } = await buildWorkspace(app, { name: 'Shared' });
  const api = currentAs(app, org.serviceToken);
  const auth = bearer(org.serviceToken);
  return {
    id,
    org,
    auth,
    dir,
    put: (p: string, body: string | Buffer) =>
      app.request
        .put(`/api/workspaces/${id}/files/content`)
        .query({ path: p })
        .set('Authorization', auth)
        .set('Content-Type', 'application/octet-stream')
        .send(body),
    post: (what: string, body: object) => api.post(`/workspaces/${id}/${what}`, body),
    revoke: (linkId: string) => api.del(`/workspaces/${id}/shares/${linkId}`),
    del: (p: string) => app.request.delete(`/api/workspaces/${id}/files`).query({ path: p }).set('Authorization', auth),
  };
}

/** The path of a public URL (the app under test is not listening on APP_URL). */
const pathOf = (url: string): string => new URL(url).pathname;

describe('files/share', () => {
  it('serves one file publicly with its Content-Type and Content-Disposition until it is revoked (410)', async () => {
    const w = await workspace();
    await w.put('report.txt', 'quarterly numbers');
    const res = await w.post('files/share', { path: 'report.txt', expires_in_seconds: 3600 });
    expect(res.status).toBe(201);
    const share = res.body.share;
    expect(share).toMatchObject({ path: 'report.txt', id: expect.stringMatching(/^shr_/) });
    expect(share.url).toMatch(new RegExp(`^${t.config.appUrl}/api/shares/[A-Za-z0-9]{40}$`));
    expect(Date.parse(share.expires_at)).toBeGreaterThan(Date.now());

    const got = await t.request.get(pathOf(share.url)); // no token
    expect(got.status).toBe(200);
    expect(got.text).toBe('quarterly numbers');
    expect(got.headers['content-type']).toBe('text/plain; charset=utf-8');
    expect(got.headers['content-disposition']).toBe('inline; filename="report.txt"');
    expect(got.headers['x-content-type-options']).toBe('nosniff');
    expect(got.headers['content-security-policy']).toContain('sandbox');
    expect(got.headers['cache-control']).toBe('private, no-store');

    const revoked = await w.revoke(share.id);
    expect(revoked.status).toBe(200);
    expect(revoked.body).toMatchObject({ id: share.id, revoked_at: expect.any(String) });
    const gone = await t.request.get(pathOf(share.url));
    expect(gone.status).toBe(410);
    expect(gone.body).toEqual(currentError('gone', 'This share was revoked'));
  });

  it('an expired share is 410; an unknown token 404; a file deleted since 404', async () => {
    const w = await workspace();
    await w.put('a.txt', 'a');
    await w.put('b.txt', 'b');
    const a = (await w.post('files/share', { path: 'a.txt' })).body.share;
    const b = (await w.post('files/share', { path: 'b.txt' })).body.share;
    // Expiry without waiting: the record's expiry is moved into the past.
    await WorkspaceLink.updateOne({ _id: a.id }, { $set: { expiresAt: new Date(Date.now() - 1000) } });
    expect((await t.request.get(pathOf(a.url))).body).toEqual(currentError('gone', 'This share has expired'));
    expect((await t.request.get('/api/shares/' + 'x'.repeat(40))).body).toEqual(
      currentError('not_found', 'Share not found')
    );
    expect((await w.del('b.txt')).status).toBe(200);
    expect((await t.request.get(pathOf(b.url))).status).toBe(404);
  });

  it('is bound to the file shared: a file deleted and created again at its path is not served (issue 30 point 13)', async () => {
    const w = await workspace();
    await w.put('report.txt', 'first file');
    await w.put('disk.txt', 'first on disk');
    const share = (await w.post('files/share', { path: 'report.txt' })).body.share;
    const onDisk = (await w.post('files/share', { path: 'disk.txt' })).body.share;
    expect((await t.request.get(pathOf(share.url))).text).toBe('first file');

    // Through the service: deleted, then another file uploaded at the same path.
    expect((await w.del('report.txt')).status).toBe(200);
    expect((await w.put('report.txt', 'another file')).status).toBe(201);
    const again = await t.request.get(pathOf(share.url));
    expect([again.status, again.body.error?.code, again.text.includes('another')]).toEqual([404, 'not_found', false]);
    // Behind the service's back (a tool, a clone): removed and written again on disk.
    rmSync(path.join(w.dir, 'disk.txt'));
    writeFileSync(path.join(w.dir, 'disk.txt'), 'another on disk');
    const replaced = await t.request.get(pathOf(onDisk.url));
    expect([replaced.status, replaced.text.includes('another')]).toEqual([404, false]);
    // A new share of the new file serves it.
    const fresh = (await w.post('files/share', { path: 'report.txt' })).body.share;
    expect((await t.request.get(pathOf(fresh.url))).text).toBe('another file');
  });

  it('follows its file when the file is overwritten through the service (an upload over it)', async () => {
    const w = await workspace();
    await w.put('notes.txt', 'version 1');
    const share = (await w.post('files/share', { path: 'notes.txt' })).body.share;
    expect((await w.put('notes.txt', 'version 2')).status).toBe(200);
    const got = await t.request.get(pathOf(share.url));
    expect([got.status, got.text]).toEqual([200, 'version 2']);
  });

  it('a share of a deleted workspace is 404', async () => {
    const w = await workspace();
    await w.put('a.txt', 'a');
    const share = (await w.post('files/share', { path: 'a.txt' })).body.share;
    expect((await v1As(t, w.org.apiToken).del(`/spaces/${w.id}`)).status).toBe(200);
    expect((await t.request.get(pathOf(share.url))).body).toEqual(currentError('not_found', 'Share not found'));
  });

  it('downloads types that are not safe to show (HTML) as attachments', async () => {
    const w = await workspace();
    await w.put('page.html', '<script>alert(1)</script>');
    const share = (await w.post('files/share', { path: 'page.html' })).body.share;
    const got = await t.request.get(pathOf(share.url));
    expect(got.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(got.headers['content-disposition']).toBe('attachment; filename="page.html"');
  });

  it('only files can be shared; a missing file is 404; revoking an unknown share is 404', async () => {
    const w = await workspace();
    await w.post('files/directory', { path: 'docs' });
    expect((await w.post('files/share', { path: 'docs' })).body).toEqual(
      currentError('validation_failed', 'Only files can be shared')
    );
    expect((await w.post('files/share', { path: 'ghost.txt' })).status).toBe(404);
    expect((await w.revoke('shr_unknown')).status).toBe(404);
    // A share of another workspace of the same organization is not revoked through this one.
    await w.put('mine.txt', 'm');
    const share = (await w.post('files/share', { path: 'mine.txt' })).body.share;
    const sibling = (await currentAs(t, w.org.serviceToken).post('/workspaces', { name: 'Sibling' })).body.workspace.id;
    const wrong = await currentAs(t, w.org.serviceToken).del(`/workspaces/${sibling}/shares/${share.id}`);
    expect(wrong.body).toEqual(currentError('not_found', 'Share not found'));
    expect((await t.request.get(pathOf(share.url))).status).toBe(200);
  });
});

describe('apps', () => {
  async function site() {
    const org = await buildOrg();
    const api = currentAs(t, org.serviceToken);
    const id: string = (await api.post('/workspaces', { name: 'Site' })).body.workspace.id;
    const put = (p: string, body: string) =>
      t.request
        .put(`/api/workspaces/${id}/files/content`)
        .query({ path: p })
        .set('Authorization', bearer(org.serviceToken))
        .send(body);
    await put('site/index.html', '<!doctype html><link rel="stylesheet" href="style.css"><h1>Hi</h1>');
    await put('site/style.css', 'h1 { color: red }');
    await put('site/assets/app.js', 'console.log(1)');
    await put('site/empty/.keep', '');
    await put('secret.txt', 'outside the app folder');
    const res = await api.post(`/workspaces/${id}/apps`, { name: 'Docs site', path: 'site' });
    return { api, id, res, put, dir: path.join(t.config.workspacesDir, org.organizationId, id) };
  }

  it('serves a folder as a static site at a public URL: index, assets with their types, a CSP', async () => {
    const { res } = await site();
    expect(res.status).toBe(201);
    const app = res.body.app;
    expect(app).toMatchObject({
      name: 'Docs site',
      path: 'site',
      id: expect.stringMatching(/^app_/),
      expires_at: null,
    });
    expect(app.url).toMatch(new RegExp(`^${t.config.appUrl}/api/apps/[A-Za-z0-9]{40}/$`));
    const home = pathOf(app.url);

    const index = await t.request.get(home);
    expect(index.status).toBe(200);
    expect(index.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(index.text).toContain('<h1>Hi</h1>');
    const csp = index.headers['content-security-policy'];
    const token = home.split('/')[3];
    expect(csp).toMatch(new RegExp(`script-src http://127\\.0\\.0\\.1:\\d+/api/apps/${token}/;`));
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain('sandbox allow-scripts');
    expect(csp).toContain("frame-ancestors 'none'");
    expect(index.headers['x-content-type-options']).toBe('nosniff');

    const css = await t.request.get(`${home}style.css`);
    expect([css.status, css.headers['content-type'], css.text]).toEqual([
      200,
      'text/css; charset=utf-8',
      'h1 { color: red }',
    ]);
    const js = await t.request.get(`${home}assets/app.js`);
    expect(js.headers['content-type']).toBe('text/javascript; charset=utf-8');

    const noSlash = await t.request.get(home.slice(0, -1));
    expect(noSlash.status).toBe(308);
    expect(noSlash.headers.location).toBe(home);
  });

  it('never lists a directory, serves nothing outside its folder, and refuses traversal with 400', async () => {
    const { res } = await site();
    const home = pathOf(res.body.app.url);
    expect((await t.request.get(`${home}empty/`)).status).toBe(404);
    const folder = await t.request.get(`${home}assets`);
    expect([folder.status, folder.headers.location]).toEqual([308, `${home}assets/`]);
    expect((await t.request.get(`${home}assets/`)).status).toBe(404);
    expect((await t.request.get(`${home}missing.html`)).status).toBe(404);
    for (const bad of ['%2e%2e/secret.txt', '..%2fsecret.txt', '%252e%252e%252fsecret.txt', 'a%00b']) {
      const r = await t.request.get(`${home}${bad}`);
      expect([bad, r.status, r.body.error?.code]).toEqual([bad, 400, 'validation_failed']);
    }
  });

  it('never serves hidden files (.env, .git) nor anything reached through a symbolic link (issue 30 point 10)', async () => {
    const { res, put, dir } = await site();
    const home = pathOf(res.body.app.url);
    await put('site/.env', 'API_KEY=hidden');
    await put('site/.git/config', '[core]');
    await put('site/assets/.secret.json', '{}');
    await put('site/.well/index.html', 'hidden folder');
    // Symbolic links made on disk (as a tool or a cloned repository would) to places elsewhere in the workspace.
    symlinkSync('../secret.txt', path.join(dir, 'site', 'leak.txt'));
    mkdirSync(path.join(dir, 'other'));
    symlinkSync('../other', path.join(dir, 'site', 'linked'));
    await put('other/index.html', 'another folder');
    await put('other/page.html', 'another page');
    for (const p of ['.env', '.git/config', 'assets/.secret.json', '.well/', '.well/index.html', 'leak.txt']) {
      const r = await t.request.get(`${home}${p}`);
      expect([p, r.status, r.text.includes('hidden') || r.text.includes('outside')]).toEqual([p, 404, false]);
    }
    for (const p of ['linked', 'linked/', 'linked/page.html']) {
      const r = await t.request.get(`${home}${p}`);
      expect([p, r.status, r.text.includes('another')]).toEqual([p, 404, false]);
    }
    expect((await t.request.get(`${home}style.css`)).status).toBe(200);
  });

  it('is never created on the workspace root, a hidden folder or through a symbolic link (400 naming path)', async () => {
    const { api, id, dir } = await site();
    const create = (body: object) => api.post(`/workspaces/${id}/apps`, body);
    const noPath = await create({ name: 'x' });
    expect([noPath.status, noPath.body.error?.message]).toEqual([400, 'Missing required field: path']);
    for (const root of ['', '.']) {
      const r = await create({ name: 'x', path: root });
      expect([root, r.status, r.body.error?.code, r.body.error?.message]).toEqual([
        root,
        400,
        'validation_failed',
        expect.stringMatching(/path/),
      ]);
    }
    mkdirSync(path.join(dir, '.git'));
    symlinkSync('site', path.join(dir, 'alias'));
    for (const bad of ['.git', 'site/empty/..keep', 'alias']) {
      const r = await create({ name: 'x', path: bad });
      expect([bad, r.status, r.body.error?.message]).toEqual([bad, 400, expect.stringMatching(/^Invalid path: /)]);
    }
  });

  it('an app stored on the workspace root (before issue 30) is no longer served: 410', async () => {
    const { res } = await site();
    await WorkspaceLink.updateOne({ _id: res.body.app.id }, { $set: { path: '' } });
    const r = await t.request.get(`${pathOf(res.body.app.url)}secret.txt`);
    expect([r.status, r.body.error?.code, r.text.includes('outside')]).toEqual([410, 'gone', false]);
  });

  it('is revocable (410 afterwards), must be a folder, and an unknown token is 404', async () => {
    const { api, id, res } = await site();
    const home = pathOf(res.body.app.url);
    expect((await api.del(`/workspaces/${id}/shares/${res.body.app.id}`)).status).toBe(200);
    expect((await t.request.get(home)).body).toEqual(currentError('gone', 'This app was revoked'));
    expect((await t.request.get(`${home}style.css`)).status).toBe(410);
    expect((await api.post(`/workspaces/${id}/apps`, { name: 'x', path: 'secret.txt' })).status).toBe(400);
    expect((await api.post(`/workspaces/${id}/apps`, { name: 'x', path: 'nope' })).status).toBe(404);
    expect((await t.request.get(`/api/apps/${'y'.repeat(40)}/`)).body).toEqual(
      currentError('not_found', 'App not found')
    );
  });
});

describe('size caps (WORKSPACE_FILE_MAX_BYTES=100, WORKSPACE_MAX_BYTES=250)', () => {
  it('413 for a file over the per-file cap, nothing written', async () => {
    const w = await workspace(small);
    const res = await w.put('big.bin', Buffer.alloc(101, 1));
    expect(res.status).toBe(413);
    expect(res.body).toEqual(currentError('payload_too_large', 'File exceeds the limit of 100 bytes per file'));
    expect((await w.put('fits.bin', Buffer.alloc(100, 1))).status).toBe(201);
    expect(readdirSync(w.dir)).toEqual(['fits.bin']);
  });

  it('413 for a write that would take the workspace over its cap; replacing a file counts its old size', async () => {
    const w = await workspace(small);
    expect((await w.put('a.bin', Buffer.alloc(100))).status).toBe(201);
    expect((await w.put('b.bin', Buffer.alloc(100))).status).toBe(201);
    const over = await w.put('c.bin', Buffer.alloc(51));
    expect(over.status).toBe(413);
    expect(over.body.error.message).toBe('The workspace would exceed its limit of 250 bytes (50 bytes left)');
    expect((await w.put('c.bin', Buffer.alloc(50))).status).toBe(201);
    expect((await w.put('a.bin', Buffer.alloc(100, 2))).status).toBe(200); // replaces 100 bytes with 100
    expect(readdirSync(w.dir).sort()).toEqual(['a.bin', 'b.bin', 'c.bin']);
  });

  it('a chunked upload (no Content-Length) is cut at the cap: 413 and no file, no temporary file left', async () => {
    const w = await workspace(small);
    const base = await small.listen();
    const status = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = http.request(`${base}/api/workspaces/${w.id}/files/content?path=stream.bin`, {
        method: 'PUT',
        headers: { Authorization: w.auth, 'Transfer-Encoding': 'chunked' },
      });
      req.on('response', (res) => {
        let body = '';
        res.on('data', (c: Buffer) => (body += c.toString()));
        res.on('end', () => resolve({ status: res.statusCode!, body }));
      });
      req.on('error', reject);
      for (let i = 0; i < 5; i++) req.write(Buffer.alloc(30, i));
      req.end();
    });
    expect(status.status).toBe(413);
    expect(JSON.parse(status.body)).toEqual(
      currentError('payload_too_large', 'File exceeds the limit of 100 bytes per file')
    );
    expect(readdirSync(w.dir)).toEqual([]);
  });
});
