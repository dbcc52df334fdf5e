/**
 * Rebuilding spend rollups from the cost ledger (commands/spendRebuild.ts, `admin spend rebuild`; docs/spend.md),
 * on the real database: calls recorded by the ledger's own writes (recordModelCall) and folded into their rollup
 * (commands/spendFold.ts), the rollup then left short of one call (as a process dying between the entry and its
 * `$inc` left it before the fold, or a restore); the dry run reports the day and changes
 * nothing, the rebuild makes the rollup equal to the one the writes had made, and a second rebuild finds nothing to
 * change. The range is checked before the database is touched, and today is refused.
 */
import { recordModelCall, type LedgerExecution } from '../../commands/spend';
import { foldSpend } from '../../commands/spendFold';
import { rebuildRangeProblem, rebuildSpendRollups } from '../../commands/spendRebuild';
import { dayOf } from '../../commands/spendTotals';
import { DEFAULT_MODEL_PRICES } from '../../lib/prices';
import { SpendRollup } from '../../models';
import { childTestEnv } from '../helpers/env';
import { useTestDatabase } from '../helpers/mongo';
import { runScript } from '../helpers/processes';

const db = useTestDatabase();

const deps = { config: { modelPrices: DEFAULT_MODEL_PRICES, budgetCacheMs: 0 } };
const exec = (n: number, over: Partial<LedgerExecution> & { missionId?: string } = {}): LedgerExecution => ({
  _id: `exe_rebuild_${n}`,
  organizationId: 'org_rebuild',
  agentId: 'agt_a',
  rootExecutionId: `exe_rebuild_${n}`,
  source: 'v1',
  jobId: null,
  provider: 'anthropic',
  model: 'claude-sonnet-4-20250514',
  ...over,
});
const tokens = (input: number, output: number) => ({ inputTokens: input, outputTokens: output });
const none = { tokens: 0, usd: 0 };

it('recomputes a day short of a call from the ledger, as the writes had made it; dry run first; then nothing to do', async () => {
  const today = dayOf(new Date());
  const tomorrow = new Date(Date.now() + 86_400_000);
  await recordModelCall(deps, exec(1), 1, tokens(100, 20), none);
  await recordModelCall(deps, exec(1), 2, { ...tokens(300, 40), cacheReadTokens: 50 }, none);
  await recordModelCall(
    deps,
    exec(2, { agentId: 'agt_b', model: 'gpt-4o', missionId: 'msn_1' }),
    1,
    tokens(7, 3),
    none
  );
  await recordModelCall(deps, exec(3, { model: 'model-without-price' }), 1, tokens(11, 5), none);
  await foldSpend();
  const id = `org_rebuild:${today}`;
  const made = await SpendRollup.findById(id).lean();
  expect(made).toMatchObject({ calls: 4, unpricedCalls: 1 });

  // A call lost by the rollup (the entry stays): what a process dying between the two writes leaves.
  await SpendRollup.collection.updateOne(
    { _id: id as never },
    {
      $inc: { calls: -1, inputTokens: -300, 'agents.agt_a.calls': -1, 'agents.agt_a.inputTokens': -300 },
    }
  );
  const short = await SpendRollup.findById(id).lean();

  const dry = await rebuildSpendRollups('org_rebuild', { from: today, to: today }, { dryRun: true, now: tomorrow });
  expect(dry).toMatchObject({ dryRun: true, days: [{ day: today, entries: 4, changed: true }] });
  expect(dry.days[0].before).toMatchObject({ calls: 3 });
  expect(dry.days[0].after).toMatchObject({ calls: 4, inputTokens: 418, outputTokens: 68 });
  expect(await SpendRollup.findById(id).lean()).toEqual(short);

  const done = await rebuildSpendRollups('org_rebuild', { from: today, to: today }, { now: tomorrow });
  expect(done.days).toMatchObject([{ day: today, changed: true }]);
  const rebuilt = await SpendRollup.findById(id).lean();
  expect(rebuilt).toEqual({ ...made, costUsd: expect.closeTo(made!.costUsd, 10) });
  expect(rebuilt!.agents).toEqual(made!.agents);
  expect(rebuilt!.models).toEqual(made!.models);
  expect(rebuilt!.missions).toEqual(made!.missions);

  const again = await rebuildSpendRollups('org_rebuild', { from: today, to: today }, { now: tomorrow });
  expect(again.days).toMatchObject([{ day: today, changed: false }]);
  // A day with neither entries nor a rollup is not listed; another organization's rollup is untouched.
  const empty = await rebuildSpendRollups('org_other', { from: today, to: today }, { now: tomorrow });
  expect(empty.days).toEqual([]);
});

it('checks the range: days in order, at most a year, all before today', async () => {
  const now = new Date('2026-12-02T10:00:00Z');
  expect(rebuildRangeProblem({ from: '2026-11-01', to: '2026-12-01' }, now)).toBeNull();
  expect(rebuildRangeProblem({ from: '2026-12-02', to: '2026-12-02' }, now)).toMatch(/before today \(2026-12-02\)/);
  expect(rebuildRangeProblem({ from: '2026-11-02', to: '2026-11-01' }, now)).toBe('--from must not be after --to');
  expect(rebuildRangeProblem({ from: '2025-01-01', to: '2026-01-02' }, now)).toMatch(/at most 366 days/);
  expect(rebuildRangeProblem({ from: '2026-11', to: '2026-11-02' }, now)).toMatch(/must be days/);
  // The CLI refuses before touching the database (exit code 2, the usage).
  const res = runScript(
    'scripts/admin.ts',
    ['spend', 'rebuild', '--org', 'org_x', '--from', '2026-11-02', '--to', '2026-11-01'],
    childTestEnv({ MONGODB_URI: db.uri })
  );
  expect(res.status).toBe(2);
  expect(res.stderr).toContain('--from must not be after --to');
  const ok = runScript(
    'scripts/admin.ts',
    ['spend', 'rebuild', '--org', 'org_rebuild', '--from', '2026-01-01', '--to', '2026-01-02', '--dry-run'],
    childTestEnv({ MONGODB_URI: db.uri })
  );
  expect([ok.status, ok.stderr]).toEqual([0, '']);
  expect(JSON.parse(ok.stdout.trim())).toEqual({ organizationId: 'org_rebuild', dryRun: true, days: [] });
}, 60_000);
