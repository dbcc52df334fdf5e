/**
 * The interactive reference (`GET /api/reference`) in a real browser: Debian's chromium driven by playwright-core
 * (the test set-up installs it when it can, test/globalSetup.ts). Every request the page makes goes to the service
 * itself: anything else is refused and counted, so the page is shown to work with no network.
 */
import type { Browser } from 'playwright-core';
import { launchChromium } from '../helpers/browser';
import { useTestApp } from '../helpers/app';
import { useTestDatabase } from '../helpers/mongo';

useTestDatabase();
const t = useTestApp();
let browser: Browser | undefined;
/** The page's window, as the functions run in the page see it (this file is compiled without the DOM types). */
interface PageWindow {
  scrollY: number;
  innerHeight: number;
  scrollBy(x: number, y: number): void;
  scrollTo(x: number, y: number): void;
}

beforeAll(async () => {
  browser = await launchChromium();
}, 60_000);
afterAll(async () => browser?.close());

it('renders the operations from /api/openapi.json and expands one, loading nothing from outside', async () => {
  const base = await t.listen();
  const page = await browser!.newPage();
  const outside: string[] = [];
  await page.route('**/*', (route) => {
    if (route.request().url().startsWith(base)) return route.continue();
    outside.push(route.request().url());
    return route.abort();
  });
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(e.message));

  const res = await page.goto(`${base}/api/reference`);
  expect(res?.status()).toBe(200);
  expect(res?.headers()['content-security-policy']).toContain("default-src 'self'");

  // Every operation of the document is listed. Swagger UI keeps only the rows near the viewport in the page once
  // a document has 150 tags and operations or more (ours has), so the page is read while scrolling it through.
  const doc = (await (await fetch(`${base}/api/openapi.json`)).json()) as { paths: Record<string, object> };
  const expected = Object.entries(doc.paths).flatMap(([p, ops]) =>
    Object.keys(ops)
      .filter((m) => ['get', 'post', 'put', 'patch', 'delete'].includes(m))
      .map((m) => `${m.toUpperCase()} ${p}`)
  );
  await page.locator('.opblock').first().waitFor({ timeout: 20_000 });
  const listed = new Set<string>();
  for (let step = 0; step < 400; step++) {
    const rows = await page.$$eval('.opblock-summary', (els) =>
      els.map((e) => {
        const method = e.querySelector('.opblock-summary-method')?.textContent ?? '';
        return `${method} ${e.querySelector('.opblock-summary-path')?.getAttribute('data-path') ?? ''}`;
      })
    );
    rows.forEach((r) => listed.add(r));
    const atEnd = await page.evaluate(() => {
      const win = globalThis as unknown as PageWindow;
      const before = win.scrollY;
      win.scrollBy(0, Math.round(win.innerHeight / 2));
      return win.scrollY === before;
    });
    if (atEnd) break;
    await page.waitForTimeout(50);
  }
  expect(expected.filter((op) => !listed.has(op))).toEqual([]);

  await page.evaluate(() => (globalThis as unknown as PageWindow).scrollTo(0, 0));
  const operation = page.locator('.opblock', { hasText: '/api/v1/agents/{id}/execute' }).first();
  for (let step = 0; step < 400 && !(await operation.isVisible()); step++) {
    await page.evaluate(() => {
      const win = globalThis as unknown as PageWindow;
      win.scrollBy(0, Math.round(win.innerHeight / 2));
    });
    await page.waitForTimeout(50);
  }
  await operation.waitFor({ timeout: 20_000 });

  await operation.locator('.opblock-summary').first().click();
  const body = operation.locator('.opblock-body');
  await body.waitFor({ timeout: 10_000 });
  expect(await body.innerText()).toMatch(/Request body/i);

  expect(outside).toEqual([]);
  expect(errors).toEqual([]);
  await page.close();
}, 90_000); // a browser scrolling the whole document through: 10 s alone, over 30 s on a loaded 2-core machine
