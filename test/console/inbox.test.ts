/**
 * The review inbox and the job page in a real browser (Debian's Chromium through playwright-core) against the real
 * stack: the app on its APP_URL, the Temporal dev server and a worker, the fake model (which echoes each iteration's
 * input, so the protocol markers of a goal or of feedback come back in the reply). Jobs are started through the
 * API; in the browser: a job under review is approved from the inbox; another gets feedback from its page and goes
 * back to work, the feedback in its transcript; a blocked job is resumed with an answer, another cancelled after
 * the in-page confirmation; another organization's job is not found; the inbox at 360 px wide. Every decision
 * carries an Idempotency-Key. On every page: no uncaught error, no dialog, no critical axe-core violation.
 */
import type { Browser, Page } from 'playwright-core';
import { currentAs } from '../helpers/current';
import { buildOrg } from '../helpers/factories';
import { expectClean, launchChromium, signedInPage } from '../helpers/browser';
import { useTestDatabase } from '../helpers/mongo';
import { until } from '../helpers/until';
import { useExecutionStack } from '../helpers/worker';

useTestDatabase();
// A browser, the service and the model on a loaded 2-core machine: room for each test (no time is asserted).
jest.setTimeout(180_000);
const stack = useExecutionStack('console-inbox', { DEFAULT_MODEL: 'claude-test' }, { appUrl: true });
let browser: Browser;

beforeAll(async () => {
  if (process.env.AAS_TEST_CONSOLE_MISSING) throw new Error(process.env.AAS_TEST_CONSOLE_MISSING);
  browser = await launchChromium();
}, 60_000);
afterAll(async () => browser?.close());

interface Setup {
  org: Awaited<ReturnType<typeof buildOrg>>;
  api: ReturnType<typeof currentAs>;
  agentId: string;
  workspaceId: string;
}

async function setup(agentName = 'Worker'): Promise<Setup> {
  const org = await buildOrg();
  const api = currentAs(stack.t, org.serviceToken);
  const agent = await api.post('/agents', { name: agentName, system_prompt: 'Do the work.' });
  expect(agent.status).toBe(201);
  const ws = await api.post('/workspaces', { name: 'Jobs' });
  expect(ws.status).toBe(201);
  return { org, api, agentId: agent.body.agent.id, workspaceId: ws.body.workspace.id };
}

async function newJob(s: Setup, title: string, goal: string): Promise<string> {
  const res = await s.api.post('/jobs', { agent_id: s.agentId, workspace_id: s.workspaceId, goal, title });
  expect(res.status).toBe(201);
  return res.body.job.id;
}

async function jobStatus(s: Setup, id: string): Promise<string> {
  const res = await s.api.get(`/jobs/${id}`);
  expect(res.status).toBe(200);
  return res.body.job.status;
}

const waitForStatus = (s: Setup, id: string, status: string): Promise<string> =>
  until(
    () => jobStatus(s, id),
    (v) => v === status,
    60_000,
    200,
    `job ${id} ${status}`
  );

/** The Idempotency-Key headers of the page's job decisions (POST /api/jobs/{id}/<action>). */
function decisionKeys(page: Page): string[] {
  const keys: string[] = [];
  page.on('request', (req) => {
    if (req.method() === 'POST' && /\/api\/jobs\/[^/]+\/(approve|iterate|resume|cancel)$/.test(req.url())) {
      keys.push(req.headers()['idempotency-key'] ?? '(none)');
    }
  });
  return keys;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

it('shows a job under review first in the inbox, live, and approves it', async () => {
  const s = await setup('Reporter');
  const done = await newJob(s, 'Finished work', 'Just do it');
  await waitForStatus(s, done, 'completed');

  const { page, watch } = await signedInPage(browser, stack.base, s.org.apiToken, '/inbox');
  const keys = decisionKeys(page);
  await page.getByRole('heading', { name: 'Review inbox' }).waitFor();
  await page.locator(`li[data-job-id="${done}"]`).waitFor();
  await page.getByRole('status').filter({ hasText: 'Live' }).waitFor();
  // A job started while the inbox is open comes in by itself (the organization stream), and waits for review.
  const review = await newJob(s, 'Report to approve', 'Write the report [[request_review]]');
  await waitForStatus(s, review, 'awaiting_review');
  await page.locator(`li[data-job-id="${review}"]`).filter({ hasText: 'awaiting review' }).waitFor({ timeout: 90_000 });
  const row = page.locator(`li[data-job-id="${review}"]`);
  await row.waitFor();
  // Waiting for a person first: the job under review comes before the completed one.
  const order = await page
    .locator('li[data-job-id]')
    .evaluateAll((els) => els.map((e) => e.getAttribute('data-job-id')));
  expect(order.indexOf(review)).toBeLessThan(order.indexOf(done));
  await page.getByRole('heading', { name: 'Awaiting review' }).waitFor();
  expect(await row.textContent()).toContain('awaiting review');
  await row.getByText('Agent: Reporter').waitFor();
  // Only what the state allows: the completed job offers nothing; the one under review no Resume.
  expect(await page.locator(`li[data-job-id="${done}"]`).getByRole('button').count()).toBe(0);
  expect(await row.getByRole('button', { name: 'Resume' }).count()).toBe(0);
  await expectClean(page, watch);

  await row.getByRole('button', { name: 'Approve' }).click();
  await waitForStatus(s, review, 'completed');
  // The inbox shows the job's new state (it now sits with the completed work).
  await page.locator(`li[data-job-id="${review}"]`).filter({ hasText: 'completed' }).waitFor();
  await until(
    () => page.getByRole('heading', { name: 'Awaiting review' }).count(),
    (n) => n === 0,
    60_000,
    200,
    'no job awaiting review'
  );
  expect(keys).toHaveLength(1);
  expect(keys[0]).toMatch(UUID);
  await expectClean(page, watch);
  await page.context().close();
});

it('requests another iteration with feedback from the job page: back to work, the feedback in its transcript', async () => {
  const s = await setup();
  const id = await newJob(s, 'Draft to iterate', 'Write a draft [[request_review]]');
  await waitForStatus(s, id, 'awaiting_review');

  const { page, watch } = await signedInPage(browser, stack.base, s.org.apiToken, '/inbox');
  const keys = decisionKeys(page);
  await page.getByRole('link', { name: 'Draft to iterate' }).click();
  await page.getByRole('heading', { name: 'Draft to iterate' }).waitFor();
  expect(new URL(page.url()).pathname).toBe(`/jobs/${id}`);
  await page.getByTestId('iteration-reply').filter({ hasText: 'Echo: Write a draft' }).waitFor();
  await page.getByRole('heading', { name: 'Lineage' }).waitFor();
  await page.getByRole('heading', { name: 'Artifacts' }).waitFor();
  await expectClean(page, watch);

  await page.getByRole('button', { name: 'Request changes' }).click();
  // The opened form's field has the focus (keyboard use).
  const focused = () => page.evaluate('document.activeElement && document.activeElement.id') as Promise<string>;
  expect(await focused()).toBe(await page.getByLabel('Feedback').getAttribute('id'));
  // Feedback is required: sending none says so, and sends nothing.
  await page.getByRole('button', { name: 'Send feedback' }).click();
  await page.getByText('Write the feedback for the next iteration.').waitFor();
  expect(keys).toHaveLength(0);
  // Slow, so the page shows the job at work before the reply is in.
  const feedback = 'Shorter please [slow:250] [[request_review]]';
  await page.getByLabel('Feedback').fill(feedback);
  await page.getByRole('button', { name: 'Send feedback' }).click();
  await page.getByText('running', { exact: true }).waitFor();
  const second = page.locator('li[data-iteration="2"]');
  await second.getByTestId('iteration-input').filter({ hasText: feedback }).waitFor();
  expect(await second.textContent()).toContain('Reviewer feedback');
  await expectClean(page, watch);
  // The reply comes in live (the job's stream), and the job is back under review.
  await second.getByTestId('iteration-reply').filter({ hasText: 'Shorter please' }).waitFor({ timeout: 90_000 });
  await page.getByText('awaiting review', { exact: true }).waitFor();
  expect(await jobStatus(s, id)).toBe('awaiting_review');
  const job = (await s.api.get(`/jobs/${id}`)).body.job as { iterations: { reason: string; input: string }[] };
  expect(job.iterations.map((i) => i.reason)).toEqual(['goal', 'feedback']);
  expect(job.iterations[1].input).toBe(feedback);
  expect(keys).toHaveLength(1);
  expect(keys[0]).toMatch(UUID);
  await expectClean(page, watch);
  await page.context().close();
});

it('resumes a blocked job with an answer, and cancels another after the in-page confirmation', async () => {
  const s = await setup();
  const toResume = await newJob(s, 'Blocked to resume', 'Plan it [[request_input: Which year?]]');
  const toCancel = await newJob(s, 'Blocked to cancel', 'Plan that [[request_input: Which city?]]');
  await waitForStatus(s, toResume, 'blocked');
  await waitForStatus(s, toCancel, 'blocked');

  const { page, watch } = await signedInPage(browser, stack.base, s.org.apiToken, '/inbox');
  const keys = decisionKeys(page);
  // The state filter: only blocked jobs.
  await page.getByRole('combobox', { name: 'Status' }).click();
  await page.getByRole('option', { name: 'blocked' }).click();
  const resumeRow = page.locator(`li[data-job-id="${toResume}"]`);
  await resumeRow.getByText('The agent asks: Which year?').waitFor();
  expect(await resumeRow.getByRole('button', { name: 'Approve' }).count()).toBe(0);
  await expectClean(page, watch);

  await resumeRow.getByRole('button', { name: 'Resume' }).click();
  await resumeRow.getByLabel('Answer').fill('2027');
  await resumeRow.getByRole('button', { name: 'Resume the job' }).click();
  await waitForStatus(s, toResume, 'completed');

  const cancelRow = page.locator(`li[data-job-id="${toCancel}"]`);
  await cancelRow.getByRole('button', { name: 'Cancel job' }).click();
  // The confirmation is in the page: keeping the job sends nothing.
  await cancelRow.getByText('Cancel this job?').waitFor();
  await expectClean(page, watch);
  // By keyboard: the confirmation's safe answer has the focus, and Enter keeps the job.
  expect(await page.evaluate('document.activeElement && document.activeElement.textContent')).toBe('Keep it');
  await page.keyboard.press('Enter');
  await cancelRow.getByRole('button', { name: 'Cancel job' }).waitFor();
  await cancelRow.getByRole('button', { name: 'Cancel job' }).click();
  await cancelRow.getByRole('button', { name: 'Yes, cancel the job' }).click();
  await waitForStatus(s, toCancel, 'cancelled');
  // Both jobs leave the blocked list.
  await until(
    () => page.locator('li[data-job-id]').count(),
    (n) => n === 0,
    60_000,
    200,
    'the blocked list empty'
  );
  await page.getByText('No jobs blocked.').waitFor();
  expect(keys).toHaveLength(2);
  expect(new Set(keys).size).toBe(2);
  for (const k of keys) expect(k).toMatch(UUID);
  await expectClean(page, watch);
  await page.context().close();
});

it('starts a job from the inbox’s form and opens it; the job reaches review in the chosen workspace', async () => {
  const s = await setup('Starter');
  const { page, watch } = await signedInPage(browser, stack.base, s.org.apiToken, '/inbox');
  await page.getByRole('heading', { name: 'Start a job' }).waitFor();
  await expectClean(page, watch);
  await page.getByRole('combobox', { name: 'Agent', exact: true }).click();
  await page.getByRole('option', { name: 'Starter', exact: true }).click();
  await page.getByRole('combobox', { name: 'Workspace', exact: true }).click();
  await page.getByRole('option', { name: 'Jobs', exact: true }).click();
  await page.getByLabel('Title', { exact: true }).fill('From the form');
  await page.getByRole('textbox', { name: 'Goal' }).fill('Draft the plan [[request_review]]');
  await page.getByRole('button', { name: 'Start job' }).click();
  await page.getByRole('heading', { name: 'From the form' }).waitFor();
  const id = decodeURIComponent(new URL(page.url()).pathname.split('/').at(-1)!);
  expect(id).toMatch(/^job_/);
  await waitForStatus(s, id, 'awaiting_review');
  const job = (await s.api.get(`/jobs/${id}`)).body.job;
  expect(job).toMatchObject({
    agent_id: s.agentId,
    workspace_id: s.workspaceId,
    goal: 'Draft the plan [[request_review]]',
  });
  await expectClean(page, watch);
  await page.context().close();
});

it('shows another organization’s job as not found, and the inbox at 360 px', async () => {
  const mine = await setup();
  const theirs = await setup('Their agent');
  const theirJob = await newJob(theirs, 'Secret job', 'Secret goal [[request_review]]');
  const myJob = await newJob(mine, 'A job with a rather long title to wrap on a phone', 'Go [[request_review]]');
  await waitForStatus(mine, myJob, 'awaiting_review');

  const viewport = { width: 360, height: 740 };
  const { page, watch } = await signedInPage(browser, stack.base, mine.org.apiToken, '/inbox', viewport);
  await page.locator(`li[data-job-id="${myJob}"]`).getByRole('button', { name: 'Approve' }).waitFor();
  expect(await page.content()).not.toContain('Secret job');
  expect(await page.evaluate('document.documentElement.scrollWidth')).toBeLessThanOrEqual(360);
  await expectClean(page, watch);

  await page.goto(`${stack.base}/jobs/${theirJob}`);
  await page.getByRole('heading', { name: 'Not found' }).waitFor();
  expect(await page.content()).not.toContain('Secret');
  await expectClean(page, watch);
  await page.goto(`${stack.base}/jobs/job_does_not_exist`);
  await page.getByRole('heading', { name: 'Not found' }).waitFor();
  await expectClean(page, watch);

  await page.goto(`${stack.base}/jobs/${myJob}`);
  await page.getByRole('heading', { name: 'A job with a rather long title to wrap on a phone' }).waitFor();
  await page.getByTestId('iteration-reply').filter({ hasText: 'Echo: Go' }).waitFor();
  expect(await page.evaluate('document.documentElement.scrollWidth')).toBeLessThanOrEqual(360);
  await expectClean(page, watch);
  await page.context().close();
});

it('shows a review’s deadline, its policy and its declared actions in the inbox (issue 40)', async () => {
  const s = await setup();
  const res = await s.api.post('/jobs', {
    agent_id: s.agentId,
    workspace_id: s.workspaceId,
    title: 'Pick a slogan',
    goal: 'Three slogans [[request_review]]',
    review: {
      actions: [{ name: 'choose', schema: { type: 'object', properties: { option: { enum: ['a', 'b'] } } } }],
      timeout: 'PT2H',
      on_timeout: 'auto_approve',
    },
  });
  expect(res.status).toBe(201);
  const timed: string = res.body.job.id;
  const plain = await newJob(s, 'No deadline', 'Draft [[request_review]]');
  await waitForStatus(s, timed, 'awaiting_review');
  await waitForStatus(s, plain, 'awaiting_review');
  const deadline = (await s.api.get(`/jobs/${timed}`)).body.job.review.deadline as string;
  expect(deadline).not.toBeNull();

  const { page, watch } = await signedInPage(browser, stack.base, s.org.apiToken, '/inbox');
  const row = page.locator(`li[data-job-id="${timed}"]`);
  await row.getByText('Review due').waitFor();
  expect(await row.locator(`[data-review-due="${deadline}"]`).textContent()).toMatch(
    /Review due .* \(then auto approve\) · Actions: approve, iterate, choose/
  );
  expect(await page.locator(`li[data-job-id="${plain}"]`).textContent()).toContain(
    'No review deadline · Actions: approve, iterate'
  );
  await expectClean(page, watch);
  await page.context().close();
});
