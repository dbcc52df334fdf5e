/**
 * Budgets end to end (docs/spend.md): real api over HTTP, the real Temporal dev server and an in-process worker, the
 * database, the official Anthropic SDK against the fake Anthropic server (whose token counts depend only on the
 * request). A spent budget refuses new executions with 402 `budget_exceeded` in both surfaces' error shapes; the
 * 80 % `budget.threshold` event is recorded once per budget and period; a per-run cap stops that run alone at its
 * next model call (terminal `error` with reason `budget_reached`); a cap reached mid-job pauses the job as
 * `needs_attention`, and raising it resumes the job to completion.
 */
import { readEvents } from '../../../commands/eventLog';
import { Execution, LedgerEntry, ServiceEvent, type ExecutionDoc } from '../../../models';
import { currentAs, currentError } from '../../helpers/current';
import { bearer, buildOrg } from '../../helpers/factories';
import { jobSetup, newJob, waitForStatus } from '../../helpers/jobs';
import { useTestDatabase } from '../../helpers/mongo';
import { until } from '../../helpers/until';
import { v1As, v1Error } from '../../helpers/v1';
import { useExecutionStack } from '../../helpers/worker';

useTestDatabase();
const stack = useExecutionStack(
  'budgets',
  {
    DEFAULT_MODEL: 'claude-test',
    // A price for the fake's model, so that USD caps can be tested (USD per million tokens).
    MODEL_PRICES: JSON.stringify({ 'claude-test': { input: 1000, output: 2000 } }),
  },
  { service: true }
);

/** Tokens the ledger recorded for an execution. */
async function ledgerTokens(executionId: string): Promise<number> {
  const entries = await LedgerEntry.find({ executionId }).lean();
  return entries.reduce((n, e) => n + e.inputTokens + e.outputTokens, 0);
}

it('budgets CRUD: validation, scopes of other organizations, spend shown in the current period', async () => {
  const org = await buildOrg();
  const api = currentAs(stack.t, org.serviceToken);
  const bad = await api.post('/budgets', { scope: 'agent', period: 'day', unit: 'tokens', limit: 10 });
  expect(bad.status).toBe(400);
  expect(bad.body.error.code).toBe('validation_failed');
  expect((await api.post('/budgets', { scope: 'organization', period: 'week', unit: 'tokens', limit: 1 })).status).toBe(
    400
  );
  expect((await api.post('/budgets', { scope: 'organization', period: 'day', unit: 'tokens', limit: 0 })).status).toBe(
    400
  );
  const made = await api.post('/budgets', {
    name: 'Daily',
    scope: 'organization',
    period: 'day',
    unit: 'usd',
    limit: 5,
  });
  expect(made.status).toBe(201);
  expect(made.body.budget).toMatchObject({
    name: 'Daily',
    scope: 'organization',
    target_id: null,
    period: 'day',
    unit: 'usd',
    limit: 5,
    spent: 0,
    percent: 0,
    reached: false,
  });
  const id = made.body.budget.id as string;
  expect((await api.get('/budgets')).body.budgets.map((b: { id: string }) => b.id)).toEqual([id]);
  expect((await api.patch(`/budgets/${id}`, { limit: 7 })).body.budget.limit).toBe(7);
  const other = currentAs(stack.t, (await buildOrg()).serviceToken);
  expect((await other.get(`/budgets/${id}`)).status).toBe(404);
  expect((await other.del(`/budgets/${id}`)).status).toBe(404);
  expect((await api.del(`/budgets/${id}`)).body).toEqual({ id, deleted: true });
  expect((await api.get(`/budgets/${id}`)).status).toBe(404);
});

it('a spent budget refuses new executions with 402 budget_exceeded in both error shapes; 80 % is told once', async () => {
  const org = await buildOrg();
  const v1 = v1As(stack.t, org.apiToken);
  const api = currentAs(stack.t, org.serviceToken);
  const agent = (await v1.post('/agents', { name: 'Spender', systemPrompt: 'x' })).body.id as string;
  // One execution measures what an identical one costs (new conversation, same message: same counts).
  const first = await v1.post(`/agents/${agent}/execute`, { message: 'same words' });
  expect(first.status).toBe(200);
  const t = await ledgerTokens(first.body.executionId);
  expect(t).toBeGreaterThan(0);
  // After the second: 2t of 2.4t (83 %: the threshold); after the third 125 %: spent; the fourth is refused.
  const budget = await api.post('/budgets', {
    scope: 'organization',
    period: 'day',
    unit: 'tokens',
    limit: 2.4 * t,
  });
  expect(budget.status).toBe(201);
  expect((await v1.post(`/agents/${agent}/execute`, { message: 'same words' })).status).toBe(200);
  expect((await v1.post(`/agents/${agent}/execute`, { message: 'same words' })).status).toBe(200);

  const refusedV1 = await v1.post(`/agents/${agent}/execute`, { message: 'same words' });
  expect(refusedV1.status).toBe(402);
  expect(refusedV1.body).toEqual(v1Error(402, 'Payment Required', expect.stringContaining('is spent')));
  const refusedCurrent = await stack.t.request
    .post('/api/agent/execute')
    .set('Authorization', bearer(org.serviceToken))
    .send({ characterId: agent, message: 'same words' });
  expect(refusedCurrent.status).toBe(402);
  expect(refusedCurrent.body).toEqual(currentError('budget_exceeded', expect.stringContaining('is spent')));
  // Nothing of the refused ones was recorded.
  expect(await Execution.countDocuments({ organizationId: org.organizationId })).toBe(3);

  const shown = await api.get(`/budgets/${budget.body.budget.id}`);
  expect(shown.body.budget).toMatchObject({ spent: 3 * t, percent: 125, reached: true });
  const thresholds = await ServiceEvent.find({ organizationId: org.organizationId, type: 'budget.threshold' }).lean();
  expect(thresholds).toHaveLength(1);
  expect(JSON.parse(thresholds[0].data)).toMatchObject({
    budgetId: budget.body.budget.id,
    scope: 'organization',
    period: 'day',
    unit: 'tokens',
    percent: 83,
    spent: 2 * t,
  });

  // Raising the cap admits executions again.
  await api.patch(`/budgets/${budget.body.budget.id}`, { limit: 100 * t });
  expect((await v1.post(`/agents/${agent}/execute`, { message: 'same words' })).status).toBe(200);
});

it('an agent budget in USD refuses that agent only', async () => {
  const org = await buildOrg();
  const v1 = v1As(stack.t, org.apiToken);
  const api = currentAs(stack.t, org.serviceToken);
  const capped = (await v1.post('/agents', { name: 'Capped', systemPrompt: 'x' })).body.id as string;
  const free = (await v1.post('/agents', { name: 'Free', systemPrompt: 'x' })).body.id as string;
  const b = await api.post('/budgets', {
    scope: 'agent',
    target_id: capped,
    period: 'month',
    unit: 'usd',
    limit: 1e-9,
  });
  expect(b.status).toBe(201);
  expect((await v1.post(`/agents/${capped}/execute`, { message: 'hi' })).status).toBe(200);
  const refused = await v1.post(`/agents/${capped}/execute`, { message: 'hi' });
  expect(refused.status).toBe(402);
  expect((await v1.post(`/agents/${free}/execute`, { message: 'hi' })).status).toBe(200);
});

it('a per-run cap stops that run alone at its next model call, with a terminal error whose reason is budget_reached', async () => {
  const org = await buildOrg();
  const v1 = v1As(stack.t, org.apiToken);
  const agent = (await v1.post('/agents', { name: 'Tools', systemPrompt: 'x' })).body.id as string;
  // Two model calls without a cap: one asking for the tool, one after its result.
  const capped = await v1.post(`/agents/${agent}/execute`, { message: '[tool:list_files {"path":""}]', maxTokens: 1 });
  const exec = await until(
    () => Execution.findOne({ organizationId: org.organizationId }).lean<ExecutionDoc>(),
    (e) => e !== null && ['failed', 'completed'].includes(e.status)
  );
  expect(capped.status).toBe(500);
  expect(exec!.status).toBe('failed');
  expect(exec!.error).toMatchObject({ code: 'budget_reached' });
  expect(await LedgerEntry.countDocuments({ executionId: exec!._id })).toBe(1);
  const events = await readEvents(exec!._id);
  expect(events.at(-1)).toMatchObject({ event: 'error', data: { reason: 'budget_reached' } });
  // The same run without a cap makes both calls; the next run is not stopped by the first one's cap.
  const free = await v1.post(`/agents/${agent}/execute`, { message: '[tool:list_files {"path":""}]' });
  expect(free.status).toBe(200);
  expect(await LedgerEntry.countDocuments({ executionId: free.body.executionId })).toBe(2);
  // Bad caps are 400.
  expect((await v1.post(`/agents/${agent}/execute`, { message: 'x', maxTokens: 0 })).status).toBe(400);
  expect((await v1.post(`/agents/${agent}/execute`, { message: 'x', maxCostUsd: -1 })).status).toBe(400);
}, 60_000);

it('a cap reached mid-job pauses the job as needs_attention; raising it resumes the job to completion', async () => {
  const s = await jobSetup(stack.t);
  const budget = await s.api.post('/budgets', { scope: 'organization', period: 'day', unit: 'tokens', limit: 1 });
  expect(budget.status).toBe(201);
  // The iteration's first model call asks for a tool; the cap is spent before the second.
  const id = await newJob(s, 'List the files [tool:list_files {"path":""}]');
  const paused = await waitForStatus(s, id, 'needs_attention', 30_000);
  expect(paused.iterations).toHaveLength(1);
  const record = (await s.api.get(`/jobs/${id}`)).body.job;
  expect(record.error).toMatchObject({ code: 'budget_reached' });
  // Actions other than cancel do not apply; the budget's change does.
  expect((await s.api.post(`/jobs/${id}/approve`, {})).status).toBe(409);
  const raised = await s.api.patch(`/budgets/${budget.body.budget.id}`, { limit: 1_000_000 });
  expect(raised.status).toBe(200);
  const done = await waitForStatus(s, id, 'completed', 30_000);
  expect(done.iterations).toHaveLength(2);
  expect((await s.api.get(`/jobs/${id}`)).body.job.error).toBeNull();
}, 90_000);
