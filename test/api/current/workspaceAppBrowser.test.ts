/**
 * A workspace app in a real browser (Debian's chromium driven by playwright-core, as in the reference test): the
 * page's own stylesheet, module script, image and data load under the app's Content-Security-Policy and sandbox,
 * an inline script does not run, and the page runs in an opaque origin (it can never act as the service's origin).
 */
import sharp from 'sharp';
import type { Browser } from 'playwright-core';
import { launchChromium } from '../../helpers/browser';
import { useTestApp } from '../../helpers/app';
import { currentAs } from '../../helpers/current';
import { bearer, buildOrg } from '../../helpers/factories';
import { useTestDatabase } from '../../helpers/mongo';

useTestDatabase();
const t = useTestApp();
let browser: Browser | undefined;

beforeAll(async () => {
  browser = await launchChromium();
}, 60_000);
afterAll(async () => browser?.close());

const INDEX = `<!doctype html>
<html><head><title>static</title>
<link rel="stylesheet" href="style.css">
<script>document.title = 'inline ran';</script>
<script type="module" src="js/app.js"></script>
</head><body><h1 id="t">Static</h1><img id="pic" src="pic.png"></body></html>`;

const SCRIPT = `document.getElementById('t').textContent = 'Script ran';
document.body.dataset.origin = self.origin;
let storage = 'readable';
try { localStorage.getItem('x'); } catch { storage = 'blocked'; }
document.body.dataset.storage = storage;
fetch('data.json').then((r) => r.json()).then((d) => { document.body.dataset.loaded = String(d.ok); });`;

it('serves a working static site whose page runs sandboxed under the app’s policy', async () => {
  const base = await t.listen();
  const org = await buildOrg();
  const api = currentAs(t, org.serviceToken);
  const id: string = (await api.post('/workspaces', { name: 'Site' })).body.workspace.id;
  const put = async (p: string, body: string | Buffer) => {
    const res = await t.request
      .put(`/api/workspaces/${id}/files/content`)
      .query({ path: p })
      .set('Authorization', bearer(org.serviceToken))
      .send(body);
    expect(res.status).toBe(201);
  };
  await put('www/index.html', INDEX);
  await put('www/style.css', 'h1 { color: rgb(255, 0, 0); }');
  await put('www/js/app.js', SCRIPT);
  await put('www/data.json', '{"ok": true}');
  await put(
    'www/pic.png',
    await sharp({ create: { width: 3, height: 2, channels: 3, background: '#000' } })
      .png()
      .toBuffer()
  );
  const app = (await api.post(`/workspaces/${id}/apps`, { name: 'Site', path: 'www' })).body.app;
  const home = `${base}${new URL(app.url).pathname}`;

  const page = await browser!.newPage();
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(e.message));
  const res = await page.goto(home);
  expect(res?.status()).toBe(200);
  // A selector, not a JavaScript predicate: the app's CSP refuses eval, which a string predicate would need.
  await page.locator('body[data-loaded="true"]').waitFor({ state: 'attached', timeout: 10_000 });

  expect(await page.locator('#t').innerText()).toBe('Script ran'); // the module script from the app's URL ran
  expect(await page.evaluate("getComputedStyle(document.getElementById('t')).color")).toBe('rgb(255, 0, 0)'); // its CSS
  expect(await page.evaluate("document.getElementById('pic').naturalWidth")).toBe(3); // its image
  expect(await page.title()).toBe('static'); // the inline script was refused by the policy
  expect(await page.evaluate('document.body.dataset.origin')).toBe('null'); // sandboxed: an opaque origin
  expect(await page.evaluate('document.body.dataset.storage')).toBe('blocked');
  expect(errors).toEqual([]);
  await page.close();
});
