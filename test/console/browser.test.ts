/**
 * The console in a real browser (Debian's Chromium through playwright-core) against the real service stack: the
 * app listening on its APP_URL, the Temporal dev server and an in-process worker, the official Anthropic SDK against
 * the fake model (scripts/fakes/anthropic.ts). Sign-in with a wrong token and with a good one (nothing of the token
 * kept where scripts read), an agent's chatUrl with a reply streaming in, a reload mid-reply resumed without gaps or
 * repeats, markup in a message and in a reply shown as text and never run, another organization's chat and a deleted
 * one as not found, sign-out. On every page: no uncaught error, no dialog, no critical axe-core violation; the chat
 * works at 360 px wide; the sign-in page's first load is measured against its 250 KB budget.
 */
import type { Browser, Page } from 'playwright-core';
import { createToken, revokeToken } from '../../commands/tokens';
import { currentAs } from '../helpers/current';
import { buildOrg } from '../helpers/factories';
import { consolePage, expectClean, launchChromium, signIn } from '../helpers/browser';
import { useTestDatabase } from '../helpers/mongo';
import { useExecutionStack } from '../helpers/worker';

useTestDatabase();
// A browser, the service and the model on a loaded 2-core machine: room for each test (no time is asserted).
jest.setTimeout(180_000);
const stack = useExecutionStack('console', { DEFAULT_MODEL: 'claude-test' }, { appUrl: true });
let browser: Browser;

beforeAll(async () => {
  if (process.env.AAS_TEST_CONSOLE_MISSING) throw new Error(process.env.AAS_TEST_CONSOLE_MISSING);
  browser = await launchChromium();
}, 60_000);
afterAll(async () => browser?.close());

const newPage = (viewport?: { width: number; height: number }) => consolePage(browser, stack.base, viewport);

/** The page's storage and readable cookies, joined (to look for a token in them). */
const readable = (page: Page): Promise<string> =>
  page.evaluate(
    'JSON.stringify([Object.entries(localStorage), Object.entries(sessionStorage), document.cookie])'
  ) as Promise<string>;

interface Setup {
  org: Awaited<ReturnType<typeof buildOrg>>;
  agentName: string;
  chatUrl: string;
  chatId: string;
}

async function setup(name = 'Helper'): Promise<Setup> {
  const org = await buildOrg();
  const api = currentAs(stack.t, org.serviceToken);
  const res = await api.post('/agents', { name, system_prompt: 'Be brief.' });
  expect(res.status).toBe(201);
  const a = res.body.agent as { organization_id: string; workspace_id: string; chat_id: string };
  return {
    org,
    agentName: name,
    chatId: a.chat_id,
    chatUrl: `/${a.organization_id}/spaces/${a.workspace_id}/chats/${a.chat_id}`,
  };
}

it('signs in: a wrong token gets a clear message, the right one a session no script can read', async () => {
  const s = await setup();
  const { page, watch } = await newPage();
  const scripts: number[] = [];
  page.on('requestfinished', (req) => {
    if (req.resourceType() === 'script')
      void req.sizes().then(
        (sizes) => scripts.push(sizes.responseBodySize),
        () => undefined
      );
  });
  // The first load of the sign-in page: the compressed JavaScript it fetched (budget 250 KB).
  const first = await page.goto(`${stack.base}/sign-in`);
  expect(first?.status()).toBe(200);
  await page.getByLabel('Access token').waitFor();
  await page.waitForLoadState('networkidle');
  const firstLoad = scripts.reduce((a, b) => a + b, 0);
  expect(scripts.length).toBeGreaterThan(0);
  expect(firstLoad).toBeLessThanOrEqual(250 * 1024);
  process.stderr.write(`[console] sign-in page first load: ${scripts.length} scripts, ${firstLoad} bytes compressed\n`);
  await expectClean(page, watch);

  // Signed out, an agent's chatUrl leads to the sign-in page (and back to it after).
  const res = await page.goto(`${stack.base}${s.chatUrl}`);
  expect(res?.status()).toBe(200);
  await page.getByLabel('Access token').waitFor();
  expect(new URL(page.url()).pathname).toBe('/sign-in');

  await signIn(page, 'td_not-a-real-token');
  await expect(page.getByRole('alert').innerText()).resolves.toContain('not accepted');
  expect(new URL(page.url()).pathname).toBe('/sign-in');

  await signIn(page, s.org.apiToken);
  // Back where the browser was going: the agent's chat.
  await page.getByRole('heading', { name: s.agentName }).waitFor();
  expect(new URL(page.url()).pathname).toBe(s.chatUrl);
  const seen = await readable(page);
  expect(seen).not.toContain(s.org.apiToken);
  expect(seen).not.toContain('td_');
  const cookies = await page.context().cookies();
  const session = cookies.find((c) => c.name === 'aas_session');
  expect(session).toMatchObject({ httpOnly: true, sameSite: 'Strict' });
  expect(session!.value).not.toContain(s.org.apiToken);
  await expectClean(page, watch);
  await page.context().close();
});

it('chats at 360 px: the reply streams in, a reload mid-reply resumes it without gaps or repeats', async () => {
  const s = await setup('Streamer');
  const { page, watch } = await newPage({ width: 360, height: 740 });
  await page.goto(`${stack.base}/sign-in`);
  await signIn(page, s.org.apiToken);
  await page.getByRole('heading', { name: 'Chats' }).waitFor();
  await page.getByRole('link', { name: 'Agents' }).click();
  await page.getByRole('link', { name: `Open chat with ${s.agentName}` }).click();
  await page.getByRole('heading', { name: s.agentName }).waitFor();
  expect(new URL(page.url()).pathname).toBe(s.chatUrl);
  await page.getByRole('status').filter({ hasText: 'Live' }).waitFor();

  const chunks = 40;
  await page.getByLabel('Message', { exact: true }).fill(`Count for me [chunks:${chunks}] [slow:300]`);
  await page.getByRole('button', { name: 'Send' }).click();
  const reply = page.getByTestId('reply').last();
  // Token by token: part of the reply is on the page while the rest is still coming.
  await reply.filter({ hasText: 'tok2 ' }).waitFor({ timeout: 60_000 });
  expect(await reply.innerText()).not.toContain(`tok${chunks}`);

  await page.reload();
  await page.getByRole('heading', { name: s.agentName }).waitFor();
  // Still writing after the reload: the reply is resumed mid-stream.
  await page.locator('[aria-label="Reply"][aria-busy="true"]').waitFor({ timeout: 60_000 });
  await page.locator('[aria-label="Reply"][aria-busy="false"]').last().waitFor({ timeout: 90_000 });
  const expected = Array.from({ length: chunks }, (_, i) => `tok${i + 1}`).join(' ');
  expect((await page.getByTestId('reply').last().innerText()).trim()).toBe(expected);
  expect(await page.getByTestId('user-message').count()).toBe(1);
  // Nothing wider than the screen.
  expect(await page.evaluate('document.documentElement.scrollWidth')).toBeLessThanOrEqual(360);
  await expectClean(page, watch);
  await page.context().close();
});

it('shows markup in a message and in its reply as text, and never runs it', async () => {
  const s = await setup();
  const { page, watch } = await newPage();
  await page.goto(`${stack.base}${s.chatUrl}`);
  await signIn(page, s.org.apiToken);
  await page.getByRole('status').filter({ hasText: 'Live' }).waitFor();
  const markup = '<img src=x onerror="alert(1)"> <script>alert(2)</script> **bold**';
  await page.getByLabel('Message', { exact: true }).fill(markup);
  await page.getByRole('button', { name: 'Send' }).click();
  await page.locator('[aria-label="Reply"][aria-busy="false"]').waitFor({ timeout: 90_000 });
  // The fake model echoes the message: the reply carries the same markup.
  expect(await page.getByTestId('user-message').innerText()).toBe(markup);
  const reply = await page.getByTestId('reply').innerText();
  expect(reply).toContain('<img src=x onerror="alert(1)">');
  expect(reply).toContain('<script>alert(2)</script>');
  // Markdown still renders: the bold text is an element, the markup is not.
  expect(await page.locator('[data-testid="reply"] strong').innerText()).toBe('bold');
  expect(await page.locator('main img, main script').count()).toBe(0);
  await expectClean(page, watch);
  await page.context().close();
});

it('shows another organization’s chat and a deleted one as not found, with nothing of them', async () => {
  const mine = await setup('Mine');
  const theirs = await setup('Secret agent');
  const api = currentAs(stack.t, theirs.org.serviceToken);
  const { page, watch } = await newPage();
  await page.goto(`${stack.base}/sign-in`);
  await signIn(page, mine.org.apiToken);
  await page.getByRole('heading', { name: 'Chats' }).waitFor();

  await page.goto(`${stack.base}${theirs.chatUrl}`);
  await page.getByRole('heading', { name: 'Not found' }).waitFor();
  expect(await page.content()).not.toContain('Secret agent');
  // Their chat's id under my organization's path: not found either.
  await page.goto(`${stack.base}${mine.chatUrl.replace(mine.chatId, theirs.chatId)}`);
  await page.getByRole('heading', { name: 'Not found' }).waitFor();
  await expectClean(page, watch);

  const deleted = await currentAs(stack.t, mine.org.serviceToken).del(`/chats/${mine.chatId}`);
  expect(deleted.status).toBe(200);
  await page.goto(`${stack.base}${mine.chatUrl}`);
  await page.getByRole('heading', { name: 'Not found' }).waitFor();
  expect(await page.getByRole('heading', { name: 'Mine' }).count()).toBe(0);
  expect((await api.get(`/chats/${theirs.chatId}/messages`)).status).toBe(200); // theirs still there for them
  await expectClean(page, watch);
  await page.context().close();
});

it('lists chats with their status, and signs out', async () => {
  const s = await setup('Lister');
  const { page, watch } = await newPage();
  await page.goto(`${stack.base}/`);
  await signIn(page, s.org.apiToken);
  await page.getByRole('heading', { name: 'Chats' }).waitFor();
  const row = page.getByRole('row').filter({ hasText: 'Lister' });
  await row.waitFor();
  expect(await row.textContent()).toContain('standby');
  await expectClean(page, watch);

  // A page of 20: how long after its data arrived the rows are on the screen (issue 36: within 100 ms; measured and
  // printed, never asserted: a time depends on the machine). The page's own clock: the API answer's responseEnd, then
  // the first animation frame that shows 20 rows.
  const api = currentAs(stack.t, s.org.serviceToken);
  const first = (await api.get('/chats')).body.chats[0] as { agent_id: string; workspace_id: string };
  for (let i = 0; i < 20; i++)
    expect((await api.post('/chats', { agent_id: first.agent_id, workspace_id: first.workspace_id })).status).toBe(201);
  await page.reload();
  const rendered = (await (
    await page.waitForFunction(() => {
      // (the page's globals, typed here: the tests compile without the DOM's types)
      const { document, performance } = globalThis as unknown as {
        document: { querySelectorAll(selector: string): { length: number } };
        performance: { now(): number; getEntriesByType(type: string): { name: string; responseEnd: number }[] };
      };
      const rows = document.querySelectorAll('tbody tr').length;
      const data = performance
        .getEntriesByType('resource')
        .filter((e) => e.name.includes('/api/chats?'))
        .at(-1);
      return rows >= 20 && data ? performance.now() - data.responseEnd : false;
    })
  ).jsonValue()) as number;
  expect(await page.locator('tbody tr').count()).toBe(20);
  process.stderr.write(`[console] chats page: 20 rows on screen ${rendered.toFixed(1)} ms after their data arrived\n`);

  await page.getByRole('row').filter({ hasText: 'Lister' }).first().getByRole('link', { name: 'Lister' }).click();
  await page.getByRole('heading', { name: 'Lister' }).waitFor();
  await expectClean(page, watch);

  await page.getByRole('button', { name: 'Sign out' }).click();
  await page.getByLabel('Access token').waitFor();
  expect(await page.evaluate("fetch('/api/session').then((r) => r.status)")).toBe(401);
  await page.goto(`${stack.base}/chats`);
  await page.getByLabel('Access token').waitFor();
  expect(new URL(page.url()).pathname).toBe('/sign-in');
  await expectClean(page, watch);
  await page.context().close();
});

it('ends the session at once when its token is revoked: the next page leads to sign-in', async () => {
  const s = await setup('Revoked');
  const { token, record } = await createToken({
    organizationId: s.org.organizationId,
    userId: s.org.userId,
    kind: 'v1',
  });
  const { page, watch } = await newPage();
  await page.goto(`${stack.base}/sign-in`);
  await signIn(page, token);
  await page.getByRole('heading', { name: 'Chats' }).waitFor();
  await page.getByRole('row').filter({ hasText: 'Revoked' }).waitFor();

  await revokeToken(s.org.organizationId, record._id);
  await page.getByRole('link', { name: 'Agents' }).click();
  await page.getByLabel('Access token').waitFor();
  expect(new URL(page.url()).pathname).toBe('/sign-in');
  expect(await page.evaluate("fetch('/api/session').then((r) => r.status)")).toBe(401);
  await expectClean(page, watch);
  await page.context().close();
});
