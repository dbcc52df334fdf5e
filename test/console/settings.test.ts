/**
 * The console's Settings page in a real browser (Debian's Chromium through playwright-core) against the real stack:
 * the app on its APP_URL, the Temporal dev server, and a worker process that delivers webhooks to a real HTTPS
 * receiver on loopback (test/helpers/webhooks.ts). Personal access tokens: created in the page and shown once,
 * revoked with an in-page confirmation (and refused by the API after), the session's own token revoked ending the
 * session. The webhook: destination set (the signing secret shown once), a test delivery, an event's delivery in
 * the log, redelivered, the secret rotated. On every page: no uncaught error, no dialog, no critical axe-core
 * violation; the page works at 360 px wide.
 */
import type { Browser, Page } from 'playwright-core';
import { createToken } from '../../commands/tokens';
import { startWebhookReceiver, type WebhookReceiver } from '../../scripts/fakes/webhookReceiver';
import { expectClean, launchChromium, signedInPage } from '../helpers/browser';
import { bearer, buildOrg } from '../helpers/factories';
import { useTestDatabase } from '../helpers/mongo';
import type { Spawned } from '../helpers/processes';
import { v1As } from '../helpers/v1';
import { startWebhookWorker } from '../helpers/webhooks';
import { useExecutionStack } from '../helpers/worker';

const db = useTestDatabase();
// A browser, the service and a worker process on a loaded 2-core machine: room for each test (no time is asserted).
jest.setTimeout(180_000);
let receiver: WebhookReceiver;
beforeAll(async () => {
  receiver = await startWebhookReceiver();
});
const stack = useExecutionStack('console-settings', { WEBHOOK_ALLOW_PRIVATE: 'true' }, { appUrl: true, worker: false });
let worker: Spawned | undefined;
let browser: Browser;

beforeAll(async () => {
  if (process.env.AAS_TEST_CONSOLE_MISSING) throw new Error(process.env.AAS_TEST_CONSOLE_MISSING);
  worker = await startWebhookWorker({
    mongodbUri: db.uri,
    taskQueue: stack.env.TEMPORAL_TASK_QUEUE!,
    caFile: receiver.caFile,
    env: stack.env,
  });
  browser = await launchChromium();
}, 120_000);
afterAll(async () => {
  await browser?.close();
  worker?.crash();
  await receiver?.close();
});

const settingsPage = (token: string, viewport?: { width: number; height: number }) =>
  signedInPage(browser, stack.base, token, '/settings', viewport);

/** A row of a table, found by its text. */
const rowWith = (page: Page, text: string) => page.getByRole('row').filter({ hasText: text });

it('creates a token shown once, revokes it after an in-page confirmation, and the API refuses it after', async () => {
  const org = await buildOrg();
  const { page, watch } = await settingsPage(org.apiToken);
  await page.getByRole('heading', { name: 'Personal access tokens' }).waitFor();
  await expectClean(page, watch);

  await page.getByLabel('Token name', { exact: false }).fill('Deploy <script>alert(1)</script>');
  await page.getByRole('button', { name: 'Create token' }).click();
  const shown = page.getByTestId('new-token');
  await shown.waitFor();
  expect(await shown.innerText()).toContain('you will not see it again');
  const token = (await page.getByTestId('new-token-value').innerText()).trim();
  expect(token).toMatch(/^td_/);
  await page.getByRole('button', { name: 'Copy token' }).waitFor();
  // The new token works, and its name is listed as text.
  expect((await v1As(stack.t, token).get('/keys')).status).toBe(200);
  const row = rowWith(page, 'Deploy <script>alert(1)</script>');
  await row.waitFor();
  await expectClean(page, watch);

  // Shown once: gone after Done, and not shown again after a reload.
  await page.getByRole('button', { name: 'Done' }).click();
  await shown.waitFor({ state: 'detached' });
  expect(await page.content()).not.toContain(token);
  await page.reload();
  await row.waitFor();
  expect(await page.content()).not.toContain(token);

  // Revoke: an in-page confirmation (no browser dialog), then the row says revoked and the API refuses the token.
  await row.getByRole('button', { name: 'Revoke Deploy <script>alert(1)</script>' }).click();
  const confirm = page.getByRole('group', { name: 'Confirm revoking Deploy <script>alert(1)</script>' });
  await confirm.getByRole('button', { name: 'Yes, revoke' }).click();
  await row.getByText('revoked').waitFor();
  expect((await v1As(stack.t, token).get('/keys')).status).toBe(401);
  // The session's own token is still listed as active.
  expect(await page.getByRole('button', { name: /^Revoke / }).count()).toBe(1);
  await expectClean(page, watch);
  await page.context().close();
});

it('revoking the token the session was made from ends the session: the page lands on sign-in', async () => {
  const org = await buildOrg();
  const own = await createToken({
    organizationId: org.organizationId,
    userId: org.userId,
    kind: 'v1',
    name: 'Browser session',
  });
  const { page, watch } = await settingsPage(own.token);
  const row = rowWith(page, 'Browser session');
  await row.getByRole('button', { name: 'Revoke Browser session' }).click();
  await page
    .getByRole('group', { name: 'Confirm revoking Browser session' })
    .getByRole('button', { name: 'Yes, revoke' })
    .click();
  await page.waitForURL((u) => u.pathname === '/sign-in');
  await page.getByRole('button', { name: 'Sign in' }).waitFor();
  expect((await v1As(stack.t, own.token).get('/keys')).status).toBe(401);
  await expectClean(page, watch);
  await page.context().close();
});

it('sets the webhook destination, sends a test, shows a delivery in the log, redelivers it, rotates the secret', async () => {
  const org = await buildOrg();
  const { page, watch } = await settingsPage(org.apiToken, { width: 360, height: 740 });
  await page.getByRole('heading', { name: 'Webhook' }).waitFor();
  await page.getByLabel('Destination URL').fill(receiver.url);
  await page.getByRole('button', { name: 'Save destination' }).click();
  const secret = page.getByTestId('new-secret-value');
  await secret.waitFor();
  const first = (await secret.innerText()).trim();
  expect(first).toMatch(/^whsec_/);
  expect(await page.getByTestId('new-secret').innerText()).toContain('you will not see it again');
  await page.getByRole('button', { name: 'Done' }).click();
  await secret.waitFor({ state: 'detached' });
  const stored = await stack.t.request.get('/api/messaging-integration').set('Authorization', bearer(org.serviceToken));
  expect(stored.body.integration).toMatchObject({ url: receiver.url, enabled: true, event_types: null });

  // A test delivery: sent by the worker to the receiver, its outcome on the page.
  await page.getByRole('button', { name: 'Send test delivery' }).click();
  await page.getByRole('status').filter({ hasText: 'Test delivered' }).waitFor();
  expect(receiver.received.some((d) => d.headers['service-event-id']?.startsWith('evt_'))).toBe(true);

  // An event of the organization (a task created through the API) is delivered and listed in the log.
  const task = await v1As(stack.t, org.apiToken).post('/tasks', { title: 'Webhook me' });
  expect(task.status).toBe(200);
  const deliveries = page.getByTestId('delivery-row').filter({ hasText: 'task.created' });
  for (let i = 0; (await deliveries.count()) === 0; i += 1) {
    if (i > 60) throw new Error('the delivery never showed in the log');
    await page.getByRole('button', { name: 'Refresh' }).click();
    await page.waitForTimeout(500);
  }
  const row = deliveries.first();
  const eventId = (await row.getAttribute('data-event-id'))!;
  await row.getByTestId('delivery-status').filter({ hasText: 'delivered' }).waitFor({ timeout: 60_000 });
  expect(receiver.of(eventId)).toHaveLength(1);

  // Redelivered: run 2, delivered again.
  await row.getByRole('button', { name: `Redeliver task.created ${eventId}` }).click();
  await row.getByTestId('delivery-run').filter({ hasText: '2' }).waitFor({ timeout: 60_000 });
  await row.getByTestId('delivery-status').filter({ hasText: 'delivered' }).waitFor({ timeout: 60_000 });
  await receiver.waitFor(eventId, 2);

  // Rotation: confirmed in the page, the new secret shown once.
  await page.getByRole('button', { name: 'Rotate signing secret' }).click();
  await page
    .getByRole('group', { name: 'Confirm rotating the signing secret' })
    .getByRole('button', { name: 'Yes, rotate' })
    .click();
  await secret.waitFor();
  const second = (await secret.innerText()).trim();
  expect(second).toMatch(/^whsec_/);
  expect(second).not.toBe(first);

  // Nothing wider than a 360 px screen.
  expect(await page.evaluate('document.documentElement.scrollWidth')).toBeLessThanOrEqual(360);
  await expectClean(page, watch);
  await page.context().close();
});
