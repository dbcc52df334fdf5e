/**
 * The Usage page's pure logic: the answer of `GET /api/usage/organization/{orgId}` shaped into chart series (one
 * row per period, one numeric column per agent) and into the table that says the same numbers in text.
 */

/** The counters the usage endpoint gives per period and per agent. */
export interface UsageCounters {
  executions: number;
  completed: number;
  failed: number;
  cancelled: number;
  input_tokens: number;
  output_tokens: number;
  /** Model calls and their cost from the cost ledger (docs/spend.md; a model without a price adds no cost). */
  calls: number;
  cost_usd: number;
}

/** One model's calls, tokens and cost over the range. */
export interface ModelCounters {
  model: string;
  calls: number;
  input_tokens: number;
  output_tokens: number;
  cost_usd: number;
}

/** The part of the usage answer the page reads. */
export interface UsageAnswer {
  period: string;
  start: string;
  end: string;
  totals: UsageCounters;
  periods: Array<UsageCounters & { start: string; agents: Array<UsageCounters & { agentId: string }> }>;
  agents: Array<UsageCounters & { agentId: string }>;
  models: ModelCounters[];
}

export type UsageMetric = 'tokens' | 'executions';

/** One agent of the chart: its id, the name shown, and its column in the rows. */
export interface SeriesAgent {
  id: string;
  name: string;
  key: string;
}

/** A chart row: the period's first day and one number per agent column. */
export type SeriesRow = { period: string } & Record<string, number | string>;

/** One line of the table: a period and an agent with activity in it. */
export interface TableRow {
  period: string;
  agentId: string;
  agentName: string;
  executions: number;
  inputTokens: number;
  outputTokens: number;
  tokens: number;
  costUsd: number;
}

const value = (c: UsageCounters, metric: UsageMetric): number =>
  metric === 'tokens' ? c.input_tokens + c.output_tokens : c.executions;

/**
 * @param agentId an agent's id.
 * @param names agent names by id (the agents list); an agent no longer listed keeps its id.
 * @returns the name to show.
 */
export function agentName(agentId: string, names: ReadonlyMap<string, string>): string {
  return names.get(agentId) ?? agentId;
}

/**
 * @param usage the usage answer.
 * @param names agent names by id.
 * @param metric tokens (input + output) or executions.
 * @returns the agents with activity in the range (most active first, by the metric, then by name) and one row per
 * period of the range (every period, zeros included), each agent's number in its own column (`a0`, `a1`, …: column
 * names never come from user text).
 */
export function usageSeries(
  usage: UsageAnswer,
  names: ReadonlyMap<string, string>,
  metric: UsageMetric
): { agents: SeriesAgent[]; rows: SeriesRow[] } {
  const ordered = [...usage.agents].sort(
    (a, b) =>
      value(b, metric) - value(a, metric) ||
      agentName(a.agentId, names).localeCompare(agentName(b.agentId, names)) ||
      a.agentId.localeCompare(b.agentId)
  );
  const agents = ordered.map((a, i) => ({ id: a.agentId, name: agentName(a.agentId, names), key: `a${i}` }));
  const rows = usage.periods.map((p) => {
    const row: SeriesRow = { period: p.start };
    for (const a of agents) row[a.key] = 0;
    for (const c of p.agents) {
      const a = agents.find((x) => x.id === c.agentId);
      if (a) row[a.key] = value(c, metric);
    }
    return row;
  });
  return { agents, rows };
}

/**
 * @param usage the usage answer.
 * @param names agent names by id.
 * @returns one line per period and agent that ran in it (periods in order, agents by name): the text alternative
 * of the charts.
 */
export function usageTable(usage: UsageAnswer, names: ReadonlyMap<string, string>): TableRow[] {
  return usage.periods.flatMap((p) =>
    p.agents
      .map((c) => ({
        period: p.start,
        agentId: c.agentId,
        agentName: agentName(c.agentId, names),
        executions: c.executions,
        inputTokens: c.input_tokens,
        outputTokens: c.output_tokens,
        tokens: c.input_tokens + c.output_tokens,
        costUsd: c.cost_usd,
      }))
      .sort((a, b) => a.agentName.localeCompare(b.agentName) || a.agentId.localeCompare(b.agentId))
  );
}

const DAY = 86_400_000;
const isoDay = (t: number): string => new Date(t).toISOString().slice(0, 10);

/**
 * @param now the current time (ms).
 * @param days how many days, today included (UTC, as the endpoint counts them).
 * @returns the range's first and last day, `YYYY-MM-DD`.
 */
export function lastDays(now: number, days: number): { start: string; end: string } {
  const today = now - (now % DAY);
  return { start: isoDay(today - (days - 1) * DAY), end: isoDay(today) };
}

/**
 * @param start a first day `YYYY-MM-DD`.
 * @param end a last day.
 * @returns why the range can't be asked for, or null (the endpoint takes at most 366 days, start not after end).
 */
export function rangeProblem(start: string, end: string): string | null {
  const re = /^\d{4}-\d{2}-\d{2}$/;
  if (!re.test(start) || !re.test(end)) return 'Choose a first and a last day.';
  const s = Date.parse(`${start}T00:00:00Z`);
  const e = Date.parse(`${end}T00:00:00Z`);
  if (Number.isNaN(s) || Number.isNaN(e)) return 'Choose a first and a last day.';
  if (s > e) return 'The first day must not be after the last day.';
  if ((e - s) / DAY + 1 > 366) return 'The period may span at most 366 days.';
  return null;
}

/**
 * @param usd an amount in US dollars.
 * @returns it for people: cents from a dollar up, four decimals below (a few calls cost fractions of a cent).
 */
export function formatUsd(usd: number): string {
  const digits = Math.abs(usd) >= 1 ? 2 : 4;
  return `$${usd.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits })}`;
}
