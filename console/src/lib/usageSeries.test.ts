/** The Usage page's shaping of the usage answer into chart series and table lines (lib/usageSeries.ts). */
import {
  formatUsd,
  lastDays,
  rangeProblem,
  usageSeries,
  usageTable,
  type UsageAnswer,
  type UsageCounters,
} from './usageSeries';

const c = (executions: number, input: number, output: number): UsageCounters => ({
  executions,
  completed: executions,
  failed: 0,
  cancelled: 0,
  input_tokens: input,
  output_tokens: output,
  calls: executions,
  cost_usd: executions / 100,
});

const usage: UsageAnswer = {
  period: 'daily',
  start: '2026-11-01',
  end: '2026-11-03',
  totals: c(4, 140, 46),
  periods: [
    { start: '2026-11-01', ...c(1, 10, 5), agents: [{ agentId: 'agt_b', ...c(1, 10, 5) }] },
    { start: '2026-11-02', ...c(0, 0, 0), agents: [] },
    {
      start: '2026-11-03',
      ...c(3, 130, 41),
      agents: [
        { agentId: 'agt_gone', ...c(1, 30, 1) },
        { agentId: 'agt_a', ...c(2, 100, 40) },
      ],
    },
  ],
  agents: [
    { agentId: 'agt_b', ...c(1, 10, 5) },
    { agentId: 'agt_gone', ...c(1, 30, 1) },
    { agentId: 'agt_a', ...c(2, 100, 40) },
  ],
  models: [],
};
const names = new Map([
  ['agt_a', 'Writer'],
  ['agt_b', '<b>Reviewer</b>'],
]);

it('gives one row per period, zeros included, and one column per agent, most tokens first', () => {
  const { agents, rows } = usageSeries(usage, names, 'tokens');
  expect(agents).toEqual([
    { id: 'agt_a', name: 'Writer', key: 'a0' },
    { id: 'agt_gone', name: 'agt_gone', key: 'a1' },
    { id: 'agt_b', name: '<b>Reviewer</b>', key: 'a2' },
  ]);
  expect(rows).toEqual([
    { period: '2026-11-01', a0: 0, a1: 0, a2: 15 },
    { period: '2026-11-02', a0: 0, a1: 0, a2: 0 },
    { period: '2026-11-03', a0: 140, a1: 31, a2: 0 },
  ]);
});

it('counts executions per agent, ties broken by name', () => {
  const { agents, rows } = usageSeries(usage, names, 'executions');
  expect(agents.map((a) => a.id)).toEqual(['agt_a', 'agt_b', 'agt_gone']);
  expect(rows[2]).toEqual({ period: '2026-11-03', a0: 2, a1: 0, a2: 1 });
});

it('has no agents and only zero periods for a quiet range', () => {
  const quiet: UsageAnswer = { ...usage, agents: [], periods: [{ start: '2026-11-01', ...c(0, 0, 0), agents: [] }] };
  expect(usageSeries(quiet, names, 'tokens')).toEqual({ agents: [], rows: [{ period: '2026-11-01' }] });
  expect(usageTable(quiet, names)).toEqual([]);
});

it('lists each period and agent that ran in it (agents by name, as the browser sorts), as the table of the charts', () => {
  expect(usageTable(usage, names)).toEqual([
    {
      period: '2026-11-01',
      agentId: 'agt_b',
      agentName: '<b>Reviewer</b>',
      executions: 1,
      inputTokens: 10,
      outputTokens: 5,
      tokens: 15,
      costUsd: 0.01,
    },
    {
      period: '2026-11-03',
      agentId: 'agt_gone',
      agentName: 'agt_gone',
      executions: 1,
      inputTokens: 30,
      outputTokens: 1,
      tokens: 31,
      costUsd: 0.01,
    },
    {
      period: '2026-11-03',
      agentId: 'agt_a',
      agentName: 'Writer',
      executions: 2,
      inputTokens: 100,
      outputTokens: 40,
      tokens: 140,
      costUsd: 0.02,
    },
  ]);
});

it('computes the last N days in UTC and checks a chosen range as the endpoint does', () => {
  expect(lastDays(Date.parse('2026-12-02T03:40:00Z'), 30)).toEqual({ start: '2026-11-03', end: '2026-12-02' });
  expect(lastDays(Date.parse('2026-12-02T00:00:00Z'), 1)).toEqual({ start: '2026-12-02', end: '2026-12-02' });
  expect(rangeProblem('2026-11-01', '2026-11-30')).toBeNull();
  expect(rangeProblem('2026-11-30', '2026-11-01')).toBe('The first day must not be after the last day.');
  expect(rangeProblem('2025-01-01', '2026-01-01')).toBeNull();
  expect(rangeProblem('2025-01-01', '2026-01-02')).toBe('The period may span at most 366 days.');
  expect(rangeProblem('2025-01-01', '2026-01-01'.slice(0, 9))).toBe('Choose a first and a last day.');
  expect(rangeProblem('', '2026-01-01')).toBe('Choose a first and a last day.');
});

it('writes amounts in US dollars: cents from a dollar up, four decimals below', () => {
  expect(formatUsd(0)).toBe('$0.0000');
  expect(formatUsd(0.00042)).toBe('$0.0004');
  expect(formatUsd(0.5)).toBe('$0.5000');
  expect(formatUsd(1234.5)).toBe('$1,234.50');
});
