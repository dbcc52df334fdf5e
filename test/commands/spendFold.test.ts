/**
 * The spend fold (commands/spendFold.ts; docs/spend.md): ledger entries written `pending` are counted in their day's
 * rollup exactly once, by one conditional write per rollup, and lose their mark. On the real database: entries of two
 * organizations and two days; a folding process SIGKILLed before its rollup write and after it (before the marks are
 * removed); two folds at once. Each time the rollups equal the sums of the entries, counted once, nothing left
 * pending. The operations of one fold are counted.
 */
import mongoose from 'mongoose';
import { ledgerEntryOf, type LedgerExecution } from '../../commands/spend';
import { foldSpend } from '../../commands/spendFold';
import { dayOf } from '../../commands/spendTotals';
import { LedgerEntry, SpendRollup } from '../../models';
import { childTestEnv } from '../helpers/env';
import { useTestDatabase } from '../helpers/mongo';
import { spawnScript } from '../helpers/processes';

const db = useTestDatabase();

let n = 0;
/** Writes `count` pending entries of an organization on a day, as the reply does; returns their token sums. */
async function write(organizationId: string, day: Date, count: number): Promise<{ input: number; output: number }> {
  const sums = { input: 0, output: 0 };
  const docs = [];
  for (let i = 0; i < count; i++) {
    n++;
    const exec: LedgerExecution = {
      _id: `exe_fold_${n}`,
      organizationId,
      agentId: n % 2 ? 'agt_a' : 'agt_b',
      rootExecutionId: `exe_fold_${n}`,
      source: 'v1',
      jobId: null,
      provider: 'anthropic',
      model: 'claude-test',
    };
    const tokens = { inputTokens: 100 + n, outputTokens: 10 + (n % 7) };
    sums.input += tokens.inputTokens;
    sums.output += tokens.outputTokens;
    docs.push(ledgerEntryOf(exec, 1, tokens, null, day));
  }
  await LedgerEntry.collection.insertMany(docs as never[]);
  return sums;
}

/** Expects each rollup to hold exactly its entries' sums, and no entry left pending. */
async function expectExact(expected: Record<string, { calls: number; input: number; output: number }>): Promise<void> {
  for (const [id, e] of Object.entries(expected)) {
    const r = await SpendRollup.findById(id).lean();
    expect(r).toMatchObject({ calls: e.calls, inputTokens: e.input, outputTokens: e.output, unpricedCalls: e.calls });
    const agents = r!.agents as Record<string, { calls: number }>;
    expect(agents.agt_a.calls + agents.agt_b.calls).toBe(e.calls);
  }
  expect(await LedgerEntry.countDocuments({ pending: true })).toBe(0);
}

const today = new Date();
const yesterday = new Date(Date.now() - 86_400_000);
const expected: Record<string, { calls: number; input: number; output: number }> = {};
async function writeAndExpect(org: string, day: Date, count: number): Promise<void> {
  const s = await write(org, day, count);
  const id = `${org}:${dayOf(day)}`;
  const e = (expected[id] ??= { calls: 0, input: 0, output: 0 });
  e.calls += count;
  e.input += s.input;
  e.output += s.output;
}

it('counts every pending entry once in its day’s rollup: two organizations, two days; the operations of a fold', async () => {
  await writeAndExpect('org_fold_1', today, 30);
  await writeAndExpect('org_fold_1', yesterday, 5);
  await writeAndExpect('org_fold_2', today, 12);
  const ops: string[] = [];
  mongoose.set('debug', (collection: string, method: string) => void ops.push(`${collection}.${method}`));
  try {
    expect(await foldSpend()).toBe(47);
  } finally {
    mongoose.set('debug', false);
  }
  await expectExact(expected);
  // One scan, then per rollup (three): its read, its entries' read, its write (a new rollup: an insert), the marks.
  expect(ops.sort()).toEqual(
    [
      'ledger_entries.find',
      ...Array.from({ length: 3 }, () => [
        'spend_rollups.findOne',
        'ledger_entries.find',
        'spend_rollups.insertOne',
        'ledger_entries.updateMany',
      ]).flat(),
    ].sort()
  );
  // Nothing pending: a fold reads once and writes nothing.
  expect(await foldSpend()).toBe(0);
});

describe.each(['before-rollup', 'after-rollup'])('a folding process SIGKILLed %s', (point) => {
  it('loses and doubles nothing: the next fold counts each entry once', async () => {
    await writeAndExpect('org_fold_1', today, 20);
    await writeAndExpect('org_fold_2', today, 3);
    const child = spawnScript('test/helpers/foldAndDie.ts', childTestEnv({ MONGODB_URI: db.uri }), [], [point]);
    const exit = await child.exited();
    expect(child.output()).toContain(`dying at ${point}`);
    expect(exit.signal).toBe('SIGKILL');
    // The dead fold left its entries pending (and, after its write, one rollup raised by them).
    expect(await LedgerEntry.countDocuments({ pending: true })).toBe(23);
    await foldSpend();
    await expectExact(expected);
  }, 60_000);
});

it('two folds at once, in two processes, count each entry once', async () => {
  await writeAndExpect('org_fold_1', today, 40);
  await writeAndExpect('org_fold_2', yesterday, 40);
  // Both folds start at the same moment and race for the same rollups.
  const startAt = Date.now() + 8000;
  const child = spawnScript(
    'test/helpers/foldAndDie.ts',
    childTestEnv({ MONGODB_URI: db.uri }),
    [],
    ['none', String(startAt)]
  );
  await child.waitFor(/ready/, 30_000);
  await new Promise((r) => setTimeout(r, startAt - Date.now()));
  const [mine] = await Promise.all([foldSpend(), child.exited()]);
  const theirs = Number(/folded (\d+)/.exec(child.output())?.[1]);
  expect(mine + theirs).toBe(80);
  await expectExact(expected);
}, 60_000);
