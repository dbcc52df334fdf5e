/**
 * The console's Tasks page and the organization's live activity stream in a real browser (Chromium through
 * playwright-core) against the real service stack (app on its APP_URL, Temporal, an in-process worker, the fake
 * model): a task assigned to the user appears under Tasks and moves only along the allowed states; an unassigned
 * one is claimed; a task created elsewhere appears without a reload; an agent's task runs from its **Run** button,
 * its output streams in and its execution names the task; the chats list shows a chat's status moving without a
 * reload, at 360 px. On every page: no uncaught error, no dialog, no critical axe-core violation.
 */
import type { Browser, Locator, Page } from 'playwright-core';
import { currentAs } from '../helpers/current';
import { buildOrg } from '../helpers/factories';
import { expectClean, launchChromium, signedInPage } from '../helpers/browser';
import { useTestDatabase } from '../helpers/mongo';
import { until } from '../helpers/until';
import { v1As } from '../helpers/v1';
import { useExecutionStack } from '../helpers/worker';

useTestDatabase();
// A browser, the service and the model on a loaded 2-core machine: room for each test (no time is asserted).
jest.setTimeout(180_000);
const stack = useExecutionStack('console-tasks', { DEFAULT_MODEL: 'claude-test' }, { appUrl: true });
let browser: Browser;

beforeAll(async () => {
  if (process.env.AAS_TEST_CONSOLE_MISSING) throw new Error(process.env.AAS_TEST_CONSOLE_MISSING);
  browser = await launchChromium();
}, 60_000);
afterAll(async () => browser?.close());

/** A section of the Tasks page, by its heading. */
const section = (page: Page, title: string): Locator => page.getByRole('region', { name: title });

/** A task's card in a section. */
const card = (where: Locator, title: string): Locator =>
  where.getByTestId('task').filter({ has: where.page().getByText(title, { exact: true }) });

/** The labels of a card's action buttons, in order. */
const actions = async (c: Locator): Promise<string[]> =>
  (
    await c
      .getByRole('group', { name: /^Actions for / })
      .getByRole('button')
      .allInnerTexts()
  ).map((s) => s.trim());

async function createTask(token: string, body: object): Promise<string> {
  const res = await v1As(stack.t, token).post('/tasks', body);
  expect(res.status).toBe(200);
  return res.body.task.id as string;
}

async function taskOf(token: string, id: string): Promise<{ status: string; assignedTo: string | null }> {
  const res = await v1As(stack.t, token).get(`/tasks/${id}`);
  expect(res.status).toBe(200);
  return res.body.task;
}

it('my tasks move only along the allowed states; an unassigned one is claimed; new tasks appear live', async () => {
  const org = await buildOrg();
  const mine = await createTask(org.apiToken, { title: 'Review the report', assignTo: org.userId });
  const open = await createTask(org.apiToken, { title: 'Anyone can take this' });
  const { page, watch } = await signedInPage(browser, stack.base, org.apiToken, '/tasks');
  await page.getByRole('heading', { name: 'Tasks', level: 1 }).waitFor();

  const myTask = card(section(page, 'Assigned to me'), 'Review the report');
  await myTask.waitFor();
  // pending: the buttons are its allowed next states, nothing else.
  expect(await actions(myTask)).toEqual(['Start', 'Cancel task']);
  await myTask.getByRole('button', { name: 'Start' }).click();
  await myTask.getByTestId('task-status').filter({ hasText: 'In progress' }).waitFor();
  expect(await actions(myTask)).toEqual(['Complete', 'Cancel task', 'Back to pending']);
  expect((await taskOf(org.apiToken, mine)).status).toBe('in_progress');
  await myTask.getByRole('button', { name: 'Complete' }).click();
  await myTask.getByTestId('task-status').filter({ hasText: 'Completed' }).waitFor();
  // A terminal state offers no move.
  expect(await actions(myTask)).toEqual([]);
  expect((await taskOf(org.apiToken, mine)).status).toBe('completed');

  const claimable = card(section(page, 'Unassigned, to claim'), 'Anyone can take this');
  await claimable.waitFor();
  // Only tasks nobody has are offered to claim.
  expect(await card(section(page, 'Unassigned, to claim'), 'Review the report').count()).toBe(0);
  await claimable.getByRole('button', { name: 'Claim' }).click();
  await card(section(page, 'Assigned to me'), 'Anyone can take this').waitFor();
  expect((await taskOf(org.apiToken, open)).assignedTo).toBe(org.userId);

  // Created through the API while the page is open: it appears without a reload (the organization stream).
  await createTask(org.apiToken, { title: 'Arrived live', assignTo: org.userId });
  await card(section(page, 'Assigned to me'), 'Arrived live').waitFor();

  // The filters are the API's: by status.
  await page.getByRole('combobox', { name: 'Status' }).click();
  await page.getByRole('option', { name: 'Completed' }).click();
  const all = section(page, 'All tasks');
  await card(all, 'Review the report').waitFor();
  await until(
    () => all.getByTestId('task').count(),
    (n) => n === 1
  );
  await expectClean(page, watch);
  await page.context().close();
});

it('an agent’s task runs from its Run button: its output streams in, its execution names the task', async () => {
  const org = await buildOrg();
  const agent = await currentAs(stack.t, org.serviceToken).post('/agents', { name: 'Runner', system_prompt: 'Go.' });
  expect(agent.status).toBe(201);
  const taskId = await createTask(org.apiToken, {
    title: 'Count to five',
    description: 'Count [chunks:5] [slow:200]',
    assignTo: agent.body.agent.id,
  });
  const { page, watch } = await signedInPage(browser, stack.base, org.apiToken, '/tasks');
  const task = card(section(page, 'All tasks'), 'Count to five');
  await task.waitFor();
  await task.getByRole('button', { name: 'Run' }).click();
  const output = task.getByRole('region', { name: 'Run output' });
  await output.getByTestId('run-output').filter({ hasText: 'tok5' }).waitFor({ timeout: 90_000 });
  expect((await output.getByTestId('run-output').innerText()).trim()).toBe('tok1 tok2 tok3 tok4 tok5');
  const link = output.getByRole('link', { name: /^Execution exec-/ });
  const executionId = (await link.innerText()).replace('Execution ', '').trim();
  expect(await link.getAttribute('href')).toBe(`/executions/${executionId}`);
  const exec = await v1As(stack.t, org.apiToken).get(`/executions/${executionId}`);
  expect(exec.status).toBe(200);
  expect(exec.body.execution.taskId).toBe(taskId);
  // The run's end moves the task, and the page shows it without a reload.
  await task.getByTestId('task-status').filter({ hasText: 'Completed' }).waitFor({ timeout: 90_000 });
  expect((await taskOf(org.apiToken, taskId)).status).toBe('completed');
  await expectClean(page, watch);
  await page.context().close();
});

it('at 360 px: the chats list shows a chat’s status moving without a reload; the Tasks page fits', async () => {
  const org = await buildOrg();
  const api = currentAs(stack.t, org.serviceToken);
  const created = await api.post('/agents', { name: 'Watcher', system_prompt: 'Be brief.' });
  expect(created.status).toBe(201);
  const a = created.body.agent as { organization_id: string; workspace_id: string; chat_id: string };
  const chatUrl = `/${a.organization_id}/spaces/${a.workspace_id}/chats/${a.chat_id}`;
  const { page, watch } = await signedInPage(browser, stack.base, org.apiToken, '/agents', {
    width: 360,
    height: 740,
  });
  await page.getByRole('heading', { name: 'Agents', level: 1 }).waitFor();
  // The chats list opens the page's one organization stream; the message is sent once it answered.
  const streamOpen = page.waitForResponse((r) => new URL(r.url()).pathname === '/api/events');
  await page.getByRole('link', { name: 'Chats' }).click();
  expect((await streamOpen).status()).toBe(200);
  const row = page.locator('tr', { has: page.locator(`a[href="${chatUrl}"]`) });
  await row.waitFor();
  await row.getByText('standby', { exact: true }).waitFor();

  const sent = await api.post(`/chats/${a.chat_id}/messages`, { message: 'Take your time [chunks:30] [slow:300]' });
  expect(sent.status).toBe(201);
  await row.getByText('working', { exact: true }).waitFor({ timeout: 90_000 });
  await row.getByText('done', { exact: true }).waitFor({ timeout: 120_000 });
  expect(await page.evaluate('document.documentElement.scrollWidth')).toBeLessThanOrEqual(360);
  await expectClean(page, watch);

  await page.getByRole('link', { name: 'Tasks' }).click();
  await page.getByRole('heading', { name: 'Tasks', level: 1 }).waitFor();
  await page.getByRole('button', { name: 'Create task' }).waitFor();
  expect(await page.evaluate('document.documentElement.scrollWidth')).toBeLessThanOrEqual(360);
  await expectClean(page, watch);
  await page.context().close();
});
