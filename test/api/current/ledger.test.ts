/**
 * The cost ledger end to end (docs/spend.md): real api over HTTP, the real Temporal dev server, worker processes, the
 * database and the official Anthropic SDK against the fake Anthropic server (which reports what it billed per
 * request). A streamed run with a tool call and a sub-agent has one entry per model call, the child's in the child
 * and counted once in the parent's total; the usage report reads the same from the daily rollups; a worker killed
 * between a model call and its ledger write loses and doubles nothing.
 */
import { randomInt } from 'node:crypto';
import { readEvents } from '../../../commands/eventLog';
import { Execution, LedgerEntry, SpendRollup, type ExecutionDoc } from '../../../models';
import { bearer, buildOrg } from '../../helpers/factories';
import { useTestDatabase } from '../../helpers/mongo';
import { parseSse } from '../../helpers/sse';
import { until } from '../../helpers/until';
import { v1As } from '../../helpers/v1';
import { useExecutionStack, useTestWorker, useWorkerProcesses } from '../../helpers/worker';

const db = useTestDatabase();
const PRICES = { 'claude-test': { input: 3, output: 15 } };
// No worker in the test process at the file's level: the crash test starts worker processes on the same queue.
const stack = useExecutionStack(
  'ledger',
  { DEFAULT_MODEL: 'claude-test', MODEL_PRICES: JSON.stringify(PRICES) },
  { worker: false }
);

/** A directive making the fake model call `delegate_to_agent` (`]` and `[` of a nested directive escaped). */
const delegate = (agentId: string, message: string): string =>
  `[tool:delegate_to_agent ${JSON.stringify({ agentId, message }).replace(/\[/g, '\\u005b').replace(/\]/g, '\\u005d')}]`;

/** USD of counts at the test's prices. */
const usd = (input: number, output: number): number => Math.round(((input * 3 + output * 15) / 1e6) * 1e8) / 1e8;

describe('a streamed run with a tool call and a sub-agent', () => {
  useTestWorker(() => stack.t, { describe: true });

  it('one entry per model call; the child’s cost in the child and once in the parent’s total; the usage report agrees', async () => {
    const org = await buildOrg();
    const api = v1As(stack.t, org.apiToken);
    const child = (await api.post('/agents', { name: 'Child', role: 'helps', systemPrompt: 'You help.' })).body
      .id as string;
    const parent = (
      await api.post('/agents', { name: 'Parent', role: 'leads', systemPrompt: 'You lead.', subAgentIds: [child] })
    ).body.id as string;
    const first = stack.fake.requests.length;
    const res = await api.post(`/agents/${parent}/execute`, {
      message: delegate(child, `hello child ${randomInt(1_000_000)}`),
      stream: true,
    });
    expect(res.status).toBe(200);
    const events = parseSse(res.text);
    expect(events.at(-1)!.event).toBe('result');
    const parentExec = await Execution.findOne({
      organizationId: org.organizationId,
      agentId: parent,
    }).lean<ExecutionDoc>();
    const childExec = await Execution.findOne({
      organizationId: org.organizationId,
      agentId: child,
    }).lean<ExecutionDoc>();
    expect(childExec!.parentExecutionId).toBe(parentExec!._id);

    // The fake billed three calls: the parent's two (the delegation, then the answer) and the child's one.
    const billed = stack.fake.usage.slice(first);
    expect(billed).toHaveLength(3);
    const entries = await LedgerEntry.find({ organizationId: org.organizationId }).sort({ createdAt: 1 }).lean();
    expect(entries.map((e) => e._id).sort()).toEqual(
      [`${parentExec!._id}:1`, `${parentExec!._id}:2`, `${childExec!._id}:1`].sort()
    );
    const sum = (list: { inputTokens: number; outputTokens: number }[]) => ({
      input: list.reduce((n, e) => n + e.inputTokens, 0),
      output: list.reduce((n, e) => n + e.outputTokens, 0),
    });
    expect(sum(entries)).toEqual(sum(billed));
    for (const e of entries) {
      expect(e.model).toBe('claude-test');
      expect(e.costUsd).toBeCloseTo(usd(e.inputTokens, e.outputTokens), 8);
    }

    const ledger = (id: string) =>
      stack.t.request.get(`/api/usage/executions/${id}`).set('Authorization', bearer(org.serviceToken));
    const ofChild = (await ledger(childExec!._id)).body;
    const ofParent = (await ledger(parentExec!._id)).body;
    const childEntries = entries.filter((e) => e.executionId === childExec!._id);
    const parentEntries = entries.filter((e) => e.executionId === parentExec!._id);
    expect(ofChild.entries).toHaveLength(1);
    expect(ofChild.entries[0]).toMatchObject({ parent_execution_id: parentExec!._id, turn: 1 });
    // Fields without a value are not stored (issue 37: bytes), and read as null.
    const stored = await LedgerEntry.collection.findOne({ _id: `${parentExec!._id}:1` as never });
    for (const field of ['chatId', 'parentExecutionId', 'jobId', 'missionId', 'cacheReadTokens', 'cacheWriteTokens'])
      expect(stored).not.toHaveProperty(field);
    expect(ofParent.entries[0]).toMatchObject({
      parent_execution_id: null,
      job_id: null,
      mission_id: null,
      cache_read_tokens: null,
      cache_write_tokens: null,
    });
    expect(ofChild.own).toEqual(ofChild.total);
    expect(ofParent.entries.map((e: { turn: number }) => e.turn)).toEqual([1, 2]);
    expect(ofParent.own).toMatchObject({
      calls: 2,
      input_tokens: sum(parentEntries).input,
      output_tokens: sum(parentEntries).output,
    });
    // The parent's total counts the child's call once.
    expect(ofParent.total).toMatchObject({
      calls: 3,
      input_tokens: sum(entries).input,
      output_tokens: sum(entries).output,
      unpriced_calls: 0,
    });
    expect(ofParent.total.cost_usd).toBeCloseTo(ofParent.own.cost_usd + ofChild.own.cost_usd, 8);
    expect(sum(childEntries).input).toBe(ofChild.own.input_tokens);

    // The usage report reads the day's rollup: the same calls and cost, per agent and per model.
    const today = new Date().toISOString().slice(0, 10);
    const usage = await stack.t.request
      .get(`/api/usage/organization/${org.organizationId}?period=daily&start=${today}&end=${today}`)
      .set('Authorization', bearer(org.serviceToken));
    expect(usage.status).toBe(200);
    expect(usage.body.totals.calls).toBe(3);
    expect(usage.body.totals.cost_usd).toBeCloseTo(ofParent.total.cost_usd, 8);
    expect(usage.body.models).toEqual([
      {
        model: 'claude-test',
        calls: 3,
        input_tokens: sum(entries).input,
        output_tokens: sum(entries).output,
        cost_usd: expect.closeTo(ofParent.total.cost_usd, 8),
      },
    ]);
    const perAgent = Object.fromEntries(
      usage.body.agents.map((a: { agentId: string; calls: number }) => [a.agentId, a.calls])
    );
    expect(perAgent).toEqual({ [parent]: 2, [child]: 1 });
    // Another organization reads nothing of it.
    const other = await buildOrg();
    expect(
      (
        await stack.t.request
          .get(`/api/usage/executions/${parentExec!._id}`)
          .set('Authorization', bearer(other.serviceToken))
      ).status
    ).toBe(404);
  }, 60_000);
});

describe('a worker killed between a model call and its ledger write', () => {
  const { start: startWorker } = useWorkerProcesses(stack, db);

  it('loses and doubles nothing: the call that completed has exactly one entry, counted once in the rollup', async () => {
    const first = await startWorker();
    const org = await buildOrg();
    const api = v1As(stack.t, org.apiToken);
    const agent = (await api.post('/agents', { name: 'Slow', systemPrompt: 'x' })).body.id as string;
    // A reply of about 4 s: the worker dies in the middle of the model call, before its entry is written.
    const reply = api
      .post(`/agents/${agent}/execute`, { message: `[chunks:40][slow:100] ${randomInt(1_000_000)}` })
      .then((r) => r);
    const exec = await until(
      () => Execution.findOne({ organizationId: org.organizationId }).lean<ExecutionDoc>(),
      (e) => e !== null
    );
    await until(
      () => readEvents(exec!._id),
      (events) => events.length >= 6,
      60_000,
      20
    );
    expect(await LedgerEntry.countDocuments({ executionId: exec!._id })).toBe(0);
    first.crash();
    await first.exited();
    await startWorker();
    const res = await reply;
    expect(res.status).toBe(200);

    // The retry finished the call (continuing after the delivered text) and wrote its one entry.
    const entries = await LedgerEntry.find({ executionId: exec!._id }).lean();
    expect(entries.map((e) => e._id)).toEqual([`${exec!._id}:1`]);
    const last = stack.fake.usage.at(-1)!;
    expect(entries[0]).toMatchObject({ inputTokens: last.inputTokens, outputTokens: last.outputTokens });
    const day = new Date().toISOString().slice(0, 10);
    // The rollup is folded from the entry off the execution's path (commands/spendFold.ts), by the worker.
    const [rollup] = await until(
      () =>
        Promise.all([
          SpendRollup.findById(`${org.organizationId}:${day}`).lean(),
          LedgerEntry.exists({ executionId: exec!._id, pending: true }),
        ]),
      ([r, pending]) => r !== null && pending === null
    );
    expect(rollup).toMatchObject({
      calls: 1,
      inputTokens: entries[0].inputTokens,
      outputTokens: entries[0].outputTokens,
    });
  }, 240_000);
});
