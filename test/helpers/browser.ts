/**
 * Debian's Chromium driven by playwright-core, for the browser tests (the global setup finds or installs it:
 * test/globalSetup.ts), and what the console's tests check on every page: uncaught errors, dialogs, and axe-core's
 * critical violations.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { ROOT } from './processes';

/** @returns a launched Chromium (close it in afterAll). */
export async function launchChromium(): Promise<Browser> {
  const executablePath = process.env.AAS_TEST_CHROMIUM;
  if (!executablePath) throw new Error(`no browser for the browser tests: ${process.env.AAS_TEST_CHROMIUM_MISSING}`);
  return chromium.launch({
    executablePath,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
}

/** What a page did that a test must see: uncaught errors and dialogs (`alert`, `confirm`, …). */
export interface PageWatch {
  errors: string[];
  dialogs: string[];
}

/**
 * @param page a page.
 * @returns the lists its uncaught errors and dialogs are added to (dialogs are dismissed).
 */
export function watchPage(page: Page): PageWatch {
  const watch: PageWatch = { errors: [], dialogs: [] };
  page.on('pageerror', (e) => watch.errors.push(e.message));
  page.on('dialog', (d) => {
    watch.dialogs.push(`${d.type()}: ${d.message()}`);
    void d.dismiss();
  });
  return watch;
}

let axeSource: string | undefined;

/**
 * Runs axe-core in the page (evaluated through the DevTools protocol, which the page's Content-Security-Policy does
 * not govern: the page itself still runs no inline script).
 * @param page a loaded page.
 * @returns the rules with a critical violation, and where.
 */
export async function criticalViolations(page: Page): Promise<string[]> {
  axeSource ??= readFileSync(path.join(ROOT, 'node_modules', 'axe-core', 'axe.min.js'), 'utf8');
  await page.evaluate(`${axeSource}\n;undefined`);
  return page.evaluate(`axe.run(document, { resultTypes: ['violations'] }).then((r) => r.violations
    .filter((v) => v.impact === 'critical')
    .map((v) => v.id + ': ' + v.nodes.map((n) => n.target.join(' ')).join(', ')))`) as Promise<string[]>;
}

/**
 * Signs in on the console's sign-in page (the page must show it).
 * @param page the page.
 * @param token a personal access token.
 */
export async function signIn(page: Page, token: string): Promise<void> {
  await page.getByLabel('Access token').fill(token);
  await page.getByRole('button', { name: 'Sign in' }).click();
}

/**
 * A page of its own browser context (its own cookies), watched: every request goes to the service itself, nothing
 * is fetched from anywhere else.
 * @param browser the launched browser.
 * @param base the service's address (the stack's `base`).
 * @param viewport the window's size (360 px wide for the phone checks).
 */
export async function consolePage(
  browser: Browser,
  base: string,
  viewport = { width: 1280, height: 800 }
): Promise<{ page: Page; watch: PageWatch }> {
  const context = await browser.newContext({ viewport });
  context.setDefaultTimeout(60_000);
  const page = await context.newPage();
  await page.route('**/*', (route) => (route.request().url().startsWith(base) ? route.continue() : route.abort()));
  return { page, watch: watchPage(page) };
}

/** @returns a console page signed in with `token`, showing the page at `path` (default the chats). */
export async function signedInPage(
  browser: Browser,
  base: string,
  token: string,
  path = '/chats',
  viewport?: { width: number; height: number }
): Promise<{ page: Page; watch: PageWatch }> {
  const opened = await consolePage(browser, base, viewport);
  await opened.page.goto(`${base}/sign-in?next=${encodeURIComponent(path)}`);
  await signIn(opened.page, token);
  await opened.page.waitForURL((u) => u.pathname === path);
  return opened;
}

/** What every console test checks on every page: no critical axe-core violation, no uncaught error, no dialog. */
export async function expectClean(page: Page, watch: PageWatch): Promise<void> {
  expect(await criticalViolations(page)).toEqual([]);
  expect(watch.errors).toEqual([]);
  expect(watch.dialogs).toEqual([]);
}
