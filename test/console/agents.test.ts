/**
 * The console's agents, executions and missions pages in a real browser (Debian's Chromium through playwright-core)
 * against the real stack (the app on its APP_URL, Temporal, an in-process worker, the fake model): an agent created,
 * edited (its system prompt, a sub-agent picked) and archived in the browser, its chat opened; an execution's
 * detail with its tree of sub-agent runs, and Cancel on a running one; a mission created with a cron schedule and a
 * time zone (the browser's by default, its next runs previewed, an invalid expression refused before anything is
 * sent), seen through the API, paused, given a task and started, at 360 px wide. On every page: no uncaught error,
 * no dialog, no critical axe-core violation.
 */
import type { Browser, Page } from 'playwright-core';
import { currentAs } from '../helpers/current';
import { buildOrg } from '../helpers/factories';
import { expectClean, launchChromium, signIn, signedInPage, watchPage } from '../helpers/browser';
import { useTestDatabase } from '../helpers/mongo';
import { until } from '../helpers/until';
import { v1As } from '../helpers/v1';
import { useExecutionStack } from '../helpers/worker';

useTestDatabase();
// A browser, the service and the model on a loaded 2-core machine: room for each test (no time is asserted).
jest.setTimeout(240_000);
const stack = useExecutionStack('console-agents', { DEFAULT_MODEL: 'claude-test' }, { appUrl: true });
let browser: Browser;

beforeAll(async () => {
  if (process.env.AAS_TEST_CONSOLE_MISSING) throw new Error(process.env.AAS_TEST_CONSOLE_MISSING);
  browser = await launchChromium();
}, 60_000);
afterAll(async () => browser?.close());

/** A directive making the fake model call `delegate_to_agent` (`[` and `]` of a nested directive escaped). */
const delegate = (agentId: string, message: string): string =>
  `[tool:delegate_to_agent ${JSON.stringify({ agentId, message }).replace(/\[/g, '\\u005b').replace(/\]/g, '\\u005d')}]`;

/** Picks `option` in the Mantine select or multi-select labelled `label`. */
async function pick(page: Page, label: string, option: string): Promise<void> {
  await page.getByRole('combobox', { name: label, exact: true }).click();
  await page.getByRole('option', { name: option, exact: true }).click();
}

it('creates an agent in the browser, edits its system prompt, opens its chat and archives it', async () => {
  const org = await buildOrg();
  const v1 = v1As(stack.t, org.apiToken);
  const helper = (await v1.post('/agents', { name: 'Researcher', systemPrompt: 'Find things.' })).body.id as string;
  const { page, watch } = await signedInPage(browser, stack.base, org.apiToken, '/agents');
  await page.getByRole('link', { name: 'Open chat with Researcher' }).waitFor();
  await expectClean(page, watch);

  await page.getByRole('link', { name: 'New agent' }).click();
  await page.getByRole('heading', { name: 'New agent' }).waitFor();
  // The service's validation message, next to the form.
  await page.getByRole('button', { name: 'Create agent' }).click();
  const refused = page.getByRole('alert').filter({ hasText: 'Not saved' });
  await refused.waitFor();
  expect(await refused.innerText()).toMatch(/name/i);
  await expectClean(page, watch);

  await page.getByLabel('Name', { exact: true }).fill('Writer <b>bold</b>');
  await page.getByLabel('System prompt').fill('Write short poems.');
  await pick(page, 'Sub-agents', 'Researcher');
  await pick(page, 'Visibility', 'Private: only its owner');
  await page.keyboard.press('Escape');
  await page.getByRole('button', { name: 'Create agent' }).click();
  await page.getByRole('heading', { name: 'Writer <b>bold</b>' }).waitFor();
  const id = decodeURIComponent(new URL(page.url()).pathname.split('/').pop()!);
  let agent = (await v1.get(`/agents/${id}`)).body.agent;
  expect(agent).toMatchObject({
    name: 'Writer <b>bold</b>',
    systemPrompt: 'Write short poems.',
    subAgentIds: [helper],
    visibility: 'private',
  });
  await expectClean(page, watch);

  // Edit the system prompt (a reload first: the form is filled from the API).
  await page.reload();
  await page.getByLabel('System prompt').waitFor();
  expect(await page.getByLabel('System prompt').inputValue()).toBe('Write short poems.');
  await page.getByLabel('System prompt').fill('Write long poems.');
  await page.getByLabel('Model').fill('claude-test');
  await page.getByRole('button', { name: 'Save' }).click();
  await page.getByRole('status').filter({ hasText: 'Saved.' }).waitFor();
  agent = (await v1.get(`/agents/${id}`)).body.agent;
  expect(agent).toMatchObject({ systemPrompt: 'Write long poems.', model: 'claude-test', subAgentIds: [helper] });
  // A refused change is said next to the form, and nothing is saved.
  await page.getByLabel('Name', { exact: true }).fill('');
  await page.getByRole('button', { name: 'Save' }).click();
  await page.getByRole('alert').filter({ hasText: 'Not saved' }).waitFor();
  expect((await v1.get(`/agents/${id}`)).body.agent.name).toBe('Writer <b>bold</b>');
  await expectClean(page, watch);

  // Its chat, from its page.
  await page.getByRole('link', { name: 'Open chat with Writer <b>bold</b>' }).click();
  await page.getByLabel('Message', { exact: true }).waitFor();
  expect(new URL(page.url()).pathname).toBe(`/${org.organizationId}/spaces/${agent.spaceId}/chats/${agent.chatId}`);
  await expectClean(page, watch);

  // Archive: an in-page confirmation (never a browser dialog), then gone from the list.
  await page.goto(`${stack.base}/agents/${id}`);
  await page.getByRole('button', { name: 'Archive agent' }).click();
  await page.getByRole('button', { name: 'Keep it' }).click();
  expect((await v1.get(`/agents/${id}`)).status).toBe(200);
  await page.getByRole('button', { name: 'Archive agent' }).click();
  await page.getByRole('button', { name: 'Yes, archive' }).click();
  await page.getByRole('heading', { name: 'Agents', exact: true }).waitFor();
  await page.getByRole('link', { name: 'Open chat with Researcher' }).waitFor();
  expect(await page.getByRole('link', { name: 'Edit Writer <b>bold</b>' }).count()).toBe(0);
  expect((await v1.get(`/agents/${id}`)).status).toBe(404);
  await expectClean(page, watch);
  await page.context().close();
});

it('shows an execution with its tree of sub-agent runs, and cancels a running one', async () => {
  const org = await buildOrg();
  const v1 = v1As(stack.t, org.apiToken);
  const writer = (await v1.post('/agents', { name: 'Poet', systemPrompt: 'Write.' })).body.id as string;
  const boss = (await v1.post('/agents', { name: 'Chief', systemPrompt: 'Lead.', subAgentIds: [writer] })).body
    .id as string;
  const done = await v1.post(`/agents/${boss}/execute`, { message: delegate(writer, 'a haiku please') });
  expect(done.status).toBe(200);
  const parentId = done.body.executionId as string;

  const { page, watch } = await signedInPage(browser, stack.base, org.apiToken, '/executions');
  await page.goto(`${stack.base}/executions?agentId=${boss}`);
  await page.getByRole('link', { name: 'Chief' }).first().click();
  await page.getByRole('heading', { name: 'Execution of Chief' }).waitFor();
  expect(new URL(page.url()).pathname).toBe(`/executions/${parentId}`);
  const tree = page.getByRole('list', { name: 'Execution tree' });
  await tree.getByRole('link', { name: 'Poet' }).waitFor();
  expect(await page.getByRole('status', { name: 'Status: completed' }).count()).toBe(1);
  expect(await page.getByLabel('Result').innerText()).toContain('Tool results:');
  expect(await page.getByRole('button', { name: 'Cancel' }).count()).toBe(0);
  await expectClean(page, watch);
  await tree.getByRole('link', { name: 'Poet' }).click();
  await page.getByRole('heading', { name: 'Execution of Poet' }).waitFor();
  await page.getByRole('link', { name: 'Parent execution' }).waitFor();
  expect(await page.getByLabel('Result').innerText()).toContain('a haiku please');
  await expectClean(page, watch);

  // A slow reply, still running: Cancel ends it.
  const running = v1.post(`/agents/${writer}/execute`, { message: 'Count [chunks:400] [slow:300]' }).then((r) => r);
  const slow = await until(
    async () => {
      const list = (await v1.get(`/executions?agentId=${writer}&status=running`)).body.executions;
      return (list as { id: string }[])[0]?.id;
    },
    (found) => found !== undefined
  );
  await page.goto(`${stack.base}/executions/${slow}`);
  await page.getByRole('status', { name: 'Status: running' }).waitFor();
  await page.getByRole('button', { name: 'Cancel' }).click();
  await page.getByRole('status', { name: 'Status: cancelled' }).waitFor();
  expect(await page.getByRole('button', { name: 'Cancel' }).count()).toBe(0);
  expect((await v1.get(`/executions/${slow}`)).body.execution.status).toBe('cancelled');
  await running;
  await expectClean(page, watch);

  // The list, filtered by agent: its executions with their status.
  await page.goto(`${stack.base}/executions?agentId=${writer}`);
  await page.getByRole('table').getByText('cancelled', { exact: true }).waitFor();
  await expectClean(page, watch);
  await page.context().close();
});

it('creates a mission with a schedule at 360 px, sees it through the API, pauses it, starts a task', async () => {
  const org = await buildOrg();
  const v1 = v1As(stack.t, org.apiToken);
  await v1.post('/agents', { name: 'Watcher', systemPrompt: 'Watch.' });
  // A browser in Tokyo: the time zone field starts there, and the preview is in Tokyo's time.
  const context = await browser.newContext({ viewport: { width: 360, height: 740 }, timezoneId: 'Asia/Tokyo' });
  context.setDefaultTimeout(60_000);
  const page = await context.newPage();
  await page.route('**/*', (route) =>
    route.request().url().startsWith(stack.base) ? route.continue() : route.abort()
  );
  const watch = watchPage(page);
  await page.goto(`${stack.base}/sign-in?next=${encodeURIComponent('/missions')}`);
  await signIn(page, org.apiToken);
  await page.getByRole('heading', { name: 'Missions', exact: true }).waitFor();
  await page.getByText('No missions yet').waitFor();
  await expectClean(page, watch);

  await page.getByRole('button', { name: 'New mission' }).click();
  await page.getByLabel('Title').fill('Daily digest');
  await page.getByLabel('Goal').fill('Summarize the news.');
  await pick(page, 'Agent', 'Watcher');
  expect(await page.getByLabel('Time zone').inputValue()).toBe('Asia/Tokyo');
  const runs = page.getByTestId('next-runs').getByRole('listitem');
  await runs.first().waitFor();
  expect(await runs.count()).toBe(5);
  expect(await runs.first().innerText()).toMatch(/09:00/);
  // An invalid expression: said at once, and nothing is sent.
  await page.getByLabel('Cron expression').fill('61 9 * * *');
  await page.getByText('That cron expression is not valid').waitFor();
  await page.getByRole('button', { name: 'Create mission' }).click();
  expect(await runs.count()).toBe(0);
  expect((await v1.get('/missions')).body.missions).toEqual([]);
  await expectClean(page, watch);

  await page.getByLabel('Cron expression').fill('30 8 * * 1-5');
  await page.getByLabel('Time zone').fill('Europe/Paris');
  await runs.first().waitFor();
  await pick(page, 'If the last run is still going', 'Skip the new run');
  // 08:30 in Paris is 16:30 in Tokyo (winter) or 15:30 (summer), written in the browser's locale (12 or 24 h).
  expect(await runs.first().innerText()).toMatch(/\b(1[56]:30|0?[34]:30\sPM)\b/);
  await page.getByRole('button', { name: 'Create mission' }).click();
  await page.getByRole('heading', { name: 'Daily digest' }).waitFor();
  const missionId = decodeURIComponent(new URL(page.url()).pathname.split('/').pop()!);
  const created = (await v1.get(`/missions/${missionId}`)).body.mission;
  expect(created).toMatchObject({
    title: 'Daily digest',
    status: 'active',
    schedule: { type: 'cron', value: '30 8 * * 1-5', timezone: 'Europe/Paris', overlap: 'skip' },
  });
  await page.getByRole('region', { name: 'Next runs' }).getByRole('listitem').first().waitFor();
  await expectClean(page, watch);

  // Pause, then resume.
  await page.getByRole('button', { name: 'Pause' }).click();
  await page.getByRole('status', { name: 'Status: paused' }).waitFor();
  expect((await v1.get(`/missions/${missionId}`)).body.mission.status).toBe('paused');
  await page.getByText('Paused: no runs until it is resumed.').waitFor();
  await page.getByRole('button', { name: 'Resume' }).click();
  await page.getByRole('status', { name: 'Status: active' }).waitFor();
  expect((await v1.get(`/missions/${missionId}`)).body.mission.status).toBe('active');
  await page.getByRole('button', { name: 'Pause' }).click();
  await page.getByRole('status', { name: 'Status: paused' }).waitFor();

  // A task, and work started on it: a job of the mission, among its runs.
  await page.getByLabel('New task').fill('Collect sources');
  await page.getByRole('button', { name: 'Add task' }).click();
  await page.getByRole('button', { name: 'Start work on Collect sources' }).click();
  await page.getByRole('link', { name: /^Job started:/ }).waitFor();
  const jobs = (await currentAs(stack.t, org.serviceToken).get(`/jobs?mission_id=${missionId}`)).body.jobs;
  expect(jobs).toHaveLength(1);
  await page.getByRole('table').getByRole('link', { name: jobs[0].title }).waitFor();
  await page.getByRole('figure', { name: 'Runs per day by outcome' }).waitFor();
  expect(await page.evaluate('document.documentElement.scrollWidth')).toBeLessThanOrEqual(360);
  await expectClean(page, watch);

  // The list shows it paused, with its schedule.
  await page.getByRole('link', { name: 'Missions', exact: true }).click();
  await page.getByRole('link', { name: 'Daily digest' }).waitFor();
  await page.getByText('paused', { exact: true }).waitFor();
  expect(await page.evaluate('document.documentElement.scrollWidth')).toBeLessThanOrEqual(360);
  await expectClean(page, watch);
  await context.close();
});
