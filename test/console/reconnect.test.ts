/**
 * The chat page through a dropped connection, in Chromium against the real stack: the browser reaches the service
 * through a TCP relay the test can cut (the relay's address is the app's APP_URL, so the session's Origin check
 * holds). Mid-reply the relay drops every connection and refuses new ones: the page says "Reconnecting…"; once the
 * relay lets connections through again, EventSource resumes after its last event and the reply ends whole, with no
 * gap and no repeat.
 */
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import type { Browser } from 'playwright-core';
import { currentAs } from '../helpers/current';
import { buildOrg } from '../helpers/factories';
import { criticalViolations, launchChromium, signIn, watchPage } from '../helpers/browser';
import { useTestDatabase } from '../helpers/mongo';
import { closeAfterAll } from '../helpers/teardown';
import { useExecutionStack } from '../helpers/worker';

/** A TCP relay to the app: `cut` drops every open connection; while `refusing`, new ones are closed at once. */
interface Relay {
  url: string;
  refusing: boolean;
  cut(): void;
  close(): Promise<void>;
}

function startRelay(target: () => number): Promise<Relay> {
  const open = new Set<net.Socket>();
  const server = net.createServer((client) => {
    if (relay.refusing) return void client.destroy();
    const upstream = net.connect(target(), '127.0.0.1');
    for (const s of [client, upstream]) {
      open.add(s);
      s.on('close', () => open.delete(s));
      s.on('error', () => undefined);
    }
    client.pipe(upstream).pipe(client);
  });
  const relay: Relay = {
    url: '',
    refusing: false,
    cut: () => open.forEach((s) => s.destroy()),
    close: () =>
      new Promise((r) => {
        relay.cut();
        server.close(() => r());
      }),
  };
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () => {
      relay.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      resolve(relay);
    })
  );
}

useTestDatabase();
// A browser, the service and the model on a loaded 2-core machine: room for each test (no time is asserted).
jest.setTimeout(180_000);
let relay: Relay;
beforeAll(async () => {
  relay = await startRelay(() => Number(new URL(stack.base).port));
});
closeAfterAll(() => relay?.close());
const stack = useExecutionStack('console-drop', () => ({ DEFAULT_MODEL: 'claude-test', APP_URL: relay.url }));
let browser: Browser;

beforeAll(async () => {
  if (process.env.AAS_TEST_CONSOLE_MISSING) throw new Error(process.env.AAS_TEST_CONSOLE_MISSING);
  browser = await launchChromium();
}, 60_000);
afterAll(async () => browser?.close());

it('shows Reconnecting… while the connection is down, then resumes the reply without gaps or repeats', async () => {
  const org = await buildOrg();
  const created = await currentAs(stack.t, org.serviceToken).post('/agents', { name: 'Relay', system_prompt: 'p' });
  expect(created.status).toBe(201);
  const a = created.body.agent as { organization_id: string; workspace_id: string; chat_id: string };
  const chatUrl = `/${a.organization_id}/spaces/${a.workspace_id}/chats/${a.chat_id}`;

  const page = await browser.newPage();
  page.setDefaultTimeout(60_000);
  const watch = watchPage(page);
  await page.goto(`${relay.url}${chatUrl}`);
  await signIn(page, org.apiToken);
  const badge = page.getByRole('status');
  await badge.filter({ hasText: 'Live' }).waitFor();

  const chunks = 40;
  await page.getByLabel('Message', { exact: true }).fill(`Count [chunks:${chunks}] [slow:300]`);
  await page.getByRole('button', { name: 'Send' }).click();
  const reply = page.getByTestId('reply').last();
  await reply.filter({ hasText: 'tok2 ' }).waitFor({ timeout: 60_000 });

  relay.refusing = true;
  relay.cut();
  await badge.filter({ hasText: 'Reconnecting…' }).waitFor({ timeout: 30_000 });
  expect(await reply.innerText()).not.toContain(`tok${chunks}`);
  relay.refusing = false;
  await badge.filter({ hasText: 'Live' }).waitFor({ timeout: 60_000 });

  await page.locator('[aria-label="Reply"][aria-busy="false"]').waitFor({ timeout: 90_000 });
  const expected = Array.from({ length: chunks }, (_, i) => `tok${i + 1}`).join(' ');
  expect((await reply.innerText()).trim()).toBe(expected);
  expect(await criticalViolations(page)).toEqual([]);
  expect(watch.errors).toEqual([]);
  expect(watch.dialogs).toEqual([]);
  await page.close();
});
