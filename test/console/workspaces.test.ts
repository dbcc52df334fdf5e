/**
 * The console's Workspaces and Workspace pages in a real browser (Debian's Chromium through playwright-core) against
 * the real stack (the app on its APP_URL, Temporal, an in-process worker, the fake model): the list, folders with
 * breadcrumbs, an upload whose content is markup previewed as text (nothing of it runs), the download link, a share
 * link created, fetched and revoked, delete after an in-page confirmation. On every page: no uncaught error, no
 * dialog, no critical axe-core violation; 360 px wide. (The Usage page: test/console/usage.test.ts.)
 */
import type { Browser, Page } from 'playwright-core';
import sharp from 'sharp';
import { expectClean, launchChromium, signedInPage } from '../helpers/browser';
import { bearer, buildOrg, buildWorkspace } from '../helpers/factories';
import { useTestDatabase } from '../helpers/mongo';
import { useExecutionStack } from '../helpers/worker';

useTestDatabase();
// A browser, the service and the model on a loaded 2-core machine: room for each test (no time is asserted).
jest.setTimeout(180_000);
const stack = useExecutionStack('console-workspaces', { DEFAULT_MODEL: 'claude-test' }, { appUrl: true });
let browser: Browser;

beforeAll(async () => {
  if (process.env.AAS_TEST_CONSOLE_MISSING) throw new Error(process.env.AAS_TEST_CONSOLE_MISSING);
  browser = await launchChromium();
}, 60_000);
afterAll(async () => browser?.close());

const MARKUP = '<img src=x onerror="alert(1)"><script>alert(2)</script>';

/** Writes a file through the API. */
async function put(token: string, workspaceId: string, path: string, content: string | Buffer): Promise<void> {
  const res = await stack.t.request
    .put(`/api/workspaces/${workspaceId}/files/content?path=${encodeURIComponent(path)}`)
    .set('Authorization', bearer(token))
    .set('Content-Type', 'application/octet-stream')
    .send(Buffer.isBuffer(content) ? content : Buffer.from(content));
  expect(res.status).toBe(201);
}

const noScrollX = async (page: Page): Promise<void> =>
  expect(await page.evaluate('document.documentElement.scrollWidth')).toBeLessThanOrEqual(360);

it('browses folders, uploads a file of markup previewed as text, shares, revokes and deletes it', async () => {
  const org = await buildOrg();
  const ws = await buildWorkspace(stack.t, { org, name: 'Docs' });
  await put(org.serviceToken, ws.id, 'notes/today.txt', 'Remember the milk');
  const png = await sharp({ create: { width: 40, height: 20, channels: 3, background: '#4c6ef5' } })
    .png()
    .toBuffer();
  await put(org.serviceToken, ws.id, 'pic.png', png);

  const { page, watch } = await signedInPage(browser, stack.base, org.apiToken, '/workspaces');
  await page.getByRole('heading', { name: 'Workspaces' }).waitFor();
  await expectClean(page, watch);
  await page.getByRole('link', { name: 'Docs' }).click();
  await page.getByRole('heading', { name: 'Docs' }).waitFor();

  // Folders: into notes, its file previewed, and back to the root by the breadcrumbs.
  await page.getByRole('link', { name: 'Folder notes' }).click();
  const crumbs = page.getByRole('navigation', { name: 'Folder' });
  await crumbs.getByRole('link', { name: 'notes' }).waitFor();
  await page.getByRole('link', { name: 'today.txt' }).click();
  await expect(page.getByTestId('file-preview').innerText()).resolves.toBe('Remember the milk');
  await expectClean(page, watch);
  await crumbs.getByRole('link', { name: 'Files' }).click();
  await page.getByRole('link', { name: 'Folder notes' }).waitFor();
  expect(new URL(page.url()).search).toBe('');

  // An image: the API's thumbnail, drawn.
  await page.getByRole('link', { name: 'pic.png' }).click();
  const thumbnail = page.getByRole('img', { name: 'Thumbnail of pic.png' });
  await thumbnail.waitFor();
  expect(await thumbnail.getAttribute('src')).toMatch(/^data:image\/png;base64,/);
  expect(await thumbnail.evaluate((img: unknown) => (img as { naturalWidth: number }).naturalWidth)).toBe(40);
  await page.getByText('png image, 40 × 20').waitFor();

  // Upload (the FileInput's file input) into the root: markup, shown as text and never run.
  await page.locator('input[type="file"]').setInputFiles({
    name: 'evil.html',
    mimeType: 'text/html',
    buffer: Buffer.from(MARKUP),
  });
  await page.getByRole('button', { name: 'Upload', exact: true }).click();
  await page.getByRole('status').filter({ hasText: 'Uploaded evil.html' }).waitFor();
  await page.getByRole('link', { name: 'evil.html' }).click();
  const preview = page.getByTestId('file-preview');
  await expect(preview.innerText()).resolves.toBe(MARKUP);
  expect(await page.locator('img[src="x"]').count()).toBe(0);
  expect(await preview.locator('script').count()).toBe(0);
  const stored = await stack.t.request
    .get(`/api/workspaces/${ws.id}/files/content?path=evil.html`)
    .set('Authorization', bearer(org.serviceToken));
  expect(stored.text).toBe(MARKUP);

  // The download link is the read route, with the session's cookie.
  const href = await page.getByRole('link', { name: 'Download' }).getAttribute('href');
  const download = await page.context().request.get(`${stack.base}${href}`);
  expect(download.status()).toBe(200);
  expect(await download.text()).toBe(MARKUP);

  // A share link: public until revoked, then 410.
  await page.getByRole('button', { name: 'Create share link' }).click();
  const url = (await page.getByTestId('share-url').innerText()).trim();
  const shared = await fetch(url);
  expect(shared.status).toBe(200);
  expect(await shared.text()).toBe(MARKUP);
  await page.getByRole('button', { name: 'Copy link' }).waitFor();
  await page.getByRole('button', { name: 'Revoke link' }).click();
  await page.getByTestId('share-link').filter({ hasText: 'revoked' }).waitFor();
  expect((await fetch(url)).status).toBe(410);
  await expectClean(page, watch);

  // At 360 px: the same page, nothing wider than the screen.
  await page.setViewportSize({ width: 360, height: 740 });
  await noScrollX(page);

  // Delete after an in-page confirmation: gone from the list and from the workspace.
  await page.getByRole('button', { name: 'Delete' }).click();
  await page
    .getByRole('group', { name: 'Confirm deleting evil.html' })
    .getByRole('button', { name: 'Yes, delete' })
    .click();
  await page.getByRole('link', { name: 'evil.html' }).waitFor({ state: 'detached' });
  const listing = await stack.t.request
    .get(`/api/workspaces/${ws.id}/files`)
    .set('Authorization', bearer(org.serviceToken));
  expect(listing.body.entries.map((e: { name: string }) => e.name).sort()).toEqual(['notes', 'pic.png']);
  await expectClean(page, watch);
  await page.context().close();
});

it('shows another organization’s workspace as not found', async () => {
  const mine = await buildOrg();
  const other = await buildWorkspace(stack.t, { name: 'Secret space' });
  const { page, watch } = await signedInPage(browser, stack.base, mine.apiToken, `/workspaces/${other.id}`);
  await page.getByRole('heading', { name: 'Not found' }).waitFor();
  expect(await page.getByText('Secret space').count()).toBe(0);
  await expectClean(page, watch);
  await page.context().close();
});
