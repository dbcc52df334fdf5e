/**
 * The console's "Sign in with SSO" in a real browser (Debian's Chromium through playwright-core) against the service
 * and a real OpenID Connect provider on loopback (`oidc-provider`, test/helpers/oidcProvider.ts; the console is its
 * confidential client): the sign-in page offers it, the provider's login and consent pages lead back to the service's
 * callback (code + PKCE, state, nonce), which ends in the same HttpOnly session cookie as a token sign-in, no script
 * can read it, and the console shows the person signed in. A person whose identity maps to no member comes back to
 * the sign-in page with a clear message and no session. On the console's pages: no uncaught error, no dialog, no
 * critical axe-core violation.
 */
import { randomBytes } from 'node:crypto';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { addIdentityDomain } from '../../commands/identity';
import { SSO_CALLBACK_PATH } from '../../commands/sso';
import { Membership, User } from '../../models';
import { useServedTestApp } from '../helpers/app';
import { expectClean, launchChromium, watchPage, type PageWatch } from '../helpers/browser';
import { buildOrg } from '../helpers/factories';
import { useTestDatabase } from '../helpers/mongo';
import { startTestIdp, type TestIdp } from '../helpers/oidcProvider';
import { closeAfterAll } from '../helpers/teardown';

useTestDatabase();
// A browser, the service and the provider on a loaded 2-core machine: room for each test (no time is asserted).
jest.setTimeout(180_000);
const CLIENT = 'aas-console';
const SECRET = `secret-${randomBytes(16).toString('hex')}`;
let idp: TestIdp;
beforeAll(async () => {
  if (process.env.AAS_TEST_CONSOLE_MISSING) throw new Error(process.env.AAS_TEST_CONSOLE_MISSING);
  idp = await startTestIdp([]);
});
closeAfterAll(() => idp?.close());
const app = useServedTestApp(
  () => ({
    OIDC_ISSUERS: JSON.stringify([{ issuer: idp.issuer, audience: [CLIENT] }]),
    OIDC_CONSOLE_ISSUER: idp.issuer,
    OIDC_CONSOLE_CLIENT_SECRET: SECRET,
  }),
  { appUrl: true }
);
let browser: Browser;
beforeAll(async () => {
  // The service's address is known now: the provider registers the console's redirect URI.
  await idp.setClients([
    {
      client_id: CLIENT,
      client_secret: SECRET,
      token_endpoint_auth_method: 'client_secret_basic',
      redirect_uris: [`${app.base}${SSO_CALLBACK_PATH}`],
      grant_types: ['authorization_code'],
      response_types: ['code'],
    },
  ]);
  browser = await launchChromium();
}, 60_000);
afterAll(async () => browser?.close());

/** A page of its own browser context that reaches the service and the provider only. */
async function newPage(): Promise<{ context: BrowserContext; page: Page; watch: PageWatch }> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  context.setDefaultTimeout(60_000);
  const page = await context.newPage();
  await page.route('**/*', (route) => {
    const url = route.request().url();
    return url.startsWith(app.base) || url.startsWith(idp.issuer) ? route.continue() : route.abort();
  });
  return { context, page, watch: watchPage(page) };
}

/** From the console's sign-in page through the provider's login (as `login`) and consent pages. */
async function signInWithSso(page: Page, login: string): Promise<void> {
  await page.goto(`${app.base}/sign-in`);
  await page.getByRole('link', { name: 'Sign in with SSO' }).click();
  await page.waitForURL((u) => u.href.startsWith(idp.issuer));
  await page.locator('input[name="login"]').fill(login);
  await page.locator('input[name="password"]').fill('any');
  await page.getByRole('button', { name: 'Sign-in' }).click();
  await page.getByRole('button', { name: 'Continue' }).click();
}

it('signs in through the identity provider and ends in the HttpOnly session cookie of a token sign-in', async () => {
  const org = await buildOrg();
  const domain = `acme-${randomBytes(4).toString('hex')}.test`;
  await addIdentityDomain({ organizationId: org.organizationId, domain });
  const email = `alice@${domain}`;
  const user = await User.create({ email, name: 'Alice' });
  await Membership.create({ organizationId: org.organizationId, userId: user._id, role: 'member' });

  const { context, page, watch } = await newPage();
  await signInWithSso(page, email);
  await page.waitForURL((u) => u.href.startsWith(app.base) && u.pathname === '/chats');
  const cookies = await context.cookies(app.base);
  const session = cookies.find((c) => c.name === 'aas_session');
  expect(session).toMatchObject({ httpOnly: true, sameSite: 'Strict', path: '/' });
  // The state cookie of the login is gone, and no script reads the session's.
  expect(cookies.find((c) => c.name === 'aas_sso')).toBeUndefined();
  expect(await page.evaluate('document.cookie')).not.toContain(session!.value);
  const who = (await page.evaluate(`fetch('/api/session').then((r) => r.json())`)) as {
    user: { id: string; email: string };
    organization: { id: string };
  };
  expect(who).toMatchObject({ user: { id: user._id, email }, organization: { id: org.organizationId } });
  await expectClean(page, watch);
  await context.close();
});

it('an identity that maps to no member comes back to the sign-in page with a message, without a session', async () => {
  const { context, page, watch } = await newPage();
  await signInWithSso(page, `stranger@nowhere-${randomBytes(4).toString('hex')}.test`);
  await page.waitForURL((u) => u.href.startsWith(app.base) && u.pathname === '/sign-in');
  await page.getByText('Your identity is not linked to a member of an organization here').waitFor();
  expect((await context.cookies(app.base)).find((c) => c.name === 'aas_session')).toBeUndefined();
  expect(await page.evaluate(`fetch('/api/session').then((r) => r.status)`)).toBe(401);
  await expectClean(page, watch);
  await context.close();
});
