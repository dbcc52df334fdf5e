/**
 * The console's Usage page in a real browser (Debian's Chromium through playwright-core) against the real stack (the
 * app on its APP_URL, Temporal, an in-process worker, the fake model, priced by MODEL_PRICES): after one execution the
 * charts are drawn (svg) and the tables' numbers (tokens, cost per agent and per model) are the API's; a budget is
 * added, shown reached with what it counted, its limit raised, and deleted after an in-page confirmation, each step
 * checked through the API. On every page: no uncaught error, no dialog, no critical axe-core violation.
 */
import type { Browser, Page } from 'playwright-core';
import { formatUsd as usd } from '../../console/src/lib/usageSeries';
import { expectClean, launchChromium, signedInPage } from '../helpers/browser';
import { bearer, buildOrg } from '../helpers/factories';
import { useTestDatabase } from '../helpers/mongo';
import { useExecutionStack } from '../helpers/worker';

useTestDatabase();
// A browser, the service and the model on a loaded 2-core machine: room for each test (no time is asserted).
jest.setTimeout(180_000);
// 0.1 USD per token: one short execution costs more than a dollar.
const PRICES = { 'claude-test': { input: 100_000, output: 100_000 } };
const stack = useExecutionStack(
  'console-usage',
  { DEFAULT_MODEL: 'claude-test', MODEL_PRICES: JSON.stringify(PRICES) },
  { appUrl: true }
);
let browser: Browser;

beforeAll(async () => {
  if (process.env.AAS_TEST_CONSOLE_MISSING) throw new Error(process.env.AAS_TEST_CONSOLE_MISSING);
  browser = await launchChromium();
}, 60_000);
afterAll(async () => browser?.close());

const noScrollX = async (page: Page): Promise<void> =>
  expect(await page.evaluate('document.documentElement.scrollWidth')).toBeLessThanOrEqual(360);

/** An organization with an agent that ran once. */
async function orgWithUsage(name: string) {
  const org = await buildOrg();
  const agent = await stack.t.request
    .post('/api/agents')
    .set('Authorization', bearer(org.serviceToken))
    .send({ name, system_prompt: 'Be brief.' });
  expect(agent.status).toBe(201);
  const agentId = agent.body.agent.id as string;
  const run = await stack.t.request
    .post('/api/agent/execute')
    .set('Authorization', bearer(org.apiToken))
    .send({ characterId: agentId, message: 'count my tokens' });
  expect(run.status).toBe(200);
  return { org, agentId };
}

it('charts usage after an execution, with a table whose numbers are the API’s', async () => {
  const { org, agentId } = await orgWithUsage('Counter <b>bot</b>');
  const usage = await stack.t.request
    .get(`/api/usage/organization/${org.organizationId}`)
    .set('Authorization', bearer(org.apiToken));
  expect(usage.status).toBe(200);
  const [mine] = usage.body.agents as {
    agentId: string;
    executions: number;
    input_tokens: number;
    output_tokens: number;
    cost_usd: number;
  }[];
  expect(mine).toMatchObject({ agentId, executions: 1 });
  // Priced (MODEL_PRICES of the stack): a cost above a dollar, written in cents.
  expect(mine.cost_usd).toBeGreaterThan(1);
  const today = usage.body.end as string;

  const { page, watch } = await signedInPage(browser, stack.base, org.apiToken, '/usage', { width: 360, height: 740 });
  const row = page
    .getByRole('table', { name: 'Usage per period and agent' })
    .getByRole('row')
    .filter({ hasText: 'Counter <b>bot</b>' });
  await row.waitFor();
  expect((await row.getByRole('cell').allInnerTexts()).map((s) => s.trim())).toEqual([
    today,
    'Counter <b>bot</b>',
    String(mine.executions),
    String(mine.input_tokens),
    String(mine.output_tokens),
    usd(mine.cost_usd),
  ]);
  await expect(page.getByTestId('total-executions').innerText()).resolves.toBe('1');
  await expect(page.getByTestId('total-cost').innerText()).resolves.toBe(usd(usage.body.totals.cost_usd as number));
  const model = page.getByRole('table', { name: 'Cost per model' }).getByRole('row').filter({ hasText: 'claude-test' });
  expect((await model.getByRole('cell').allInnerTexts()).map((s) => s.trim())).toEqual([
    'claude-test',
    '1',
    String(mine.input_tokens),
    String(mine.output_tokens),
    usd(mine.cost_usd),
  ]);
  // Both charts are drawn: an svg with a bar for the agent.
  for (const chart of ['tokens-chart', 'executions-chart']) {
    const figure = page.getByTestId(chart);
    await figure.locator('svg.recharts-surface').first().waitFor();
    await figure.locator('.recharts-bar-rectangle').first().waitFor();
  }
  await noScrollX(page);
  await expectClean(page, watch);

  // Another period: per month, the same totals.
  // By keyboard (at 360 px the layout's fixed header covers the top of the page).
  await page.getByRole('combobox', { name: 'Per', exact: true }).press('ArrowDown');
  await page.getByRole('option', { name: 'Per month' }).click();
  await expect(page.getByRole('combobox', { name: 'Per', exact: true }).inputValue()).resolves.toBe('Per month');
  await page.getByRole('button', { name: 'Show' }).press('Enter');
  await page
    .getByRole('table', { name: 'Usage per period and agent' })
    .getByRole('row')
    .filter({ hasText: `${today.slice(0, 8)}01` })
    .waitFor();
  await expect(page.getByTestId('total-executions').innerText()).resolves.toBe('1');
  await expectClean(page, watch);
  await page.context().close();
});

it('adds a budget for an agent, shows it reached, raises its limit and deletes it', async () => {
  const { org, agentId } = await orgWithUsage('Spender');
  const budgets = async () =>
    (await stack.t.request.get('/api/budgets').set('Authorization', bearer(org.serviceToken))).body.budgets as {
      id: string;
      limit: number;
      spent: number;
      reached: boolean;
      scope: string;
      target_id: string;
    }[];
  const { page, watch } = await signedInPage(browser, stack.base, org.apiToken, '/usage');
  await page.getByText('No budgets: spend is not capped.').waitFor();
  const form = page.getByRole('form', { name: 'New budget' });
  await form.getByRole('textbox', { name: 'Name (optional)' }).fill('Spender cap');
  await form.getByRole('combobox', { name: 'Covers' }).click();
  await page.getByRole('option', { name: 'One agent' }).click();
  await form.getByRole('combobox', { name: 'Agent' }).click();
  await page.getByRole('option', { name: 'Spender' }).click();
  await form.getByRole('textbox', { name: 'Limit' }).fill('0');
  await form.getByText('The limit must be above 0.').waitFor();
  expect(await form.getByRole('button', { name: 'Add budget' }).isDisabled()).toBe(true);
  await form.getByRole('textbox', { name: 'Limit' }).fill('1');
  await form.getByRole('button', { name: 'Add budget' }).click();

  const row = page.getByRole('table', { name: 'Budgets' }).getByRole('row').filter({ hasText: 'Spender cap' });
  await row.getByText('Reached').waitFor();
  const [stored] = await budgets();
  expect(stored).toMatchObject({ scope: 'agent', target_id: agentId, limit: 1, reached: true });
  await row.getByText(`${usd(stored.spent)} (`).waitFor();
  await expectClean(page, watch);

  // Raised: no longer reached.
  await row.getByRole('button', { name: 'Change the limit of Spender cap' }).click();
  await row.getByRole('textbox', { name: 'New limit' }).fill('1000');
  await row.getByRole('button', { name: 'Save' }).click();
  await row.getByText('Under').waitFor();
  expect(await budgets()).toEqual([expect.objectContaining({ limit: 1000, reached: false })]);

  // Deleted after an in-page confirmation.
  await row.getByRole('button', { name: 'Delete Spender cap' }).first().click();
  await row.getByRole('button', { name: 'Delete Spender cap' }).click();
  await page.getByText('No budgets: spend is not capped.').waitFor();
  expect(await budgets()).toEqual([]);
  await expectClean(page, watch);
  await page.context().close();
});
