/**
 * Usage of an organization per period (daily, weekly from Monday, monthly) and per agent, computed from the
 * executions' recorded token usage. Aggregated in the process over a bounded date range (at most 366 days), which
 * needs nothing beyond what both MongoDB and FerretDB support.
 */
import mongoose from 'mongoose';
import { ValidationError } from '../lib/errors';
import { Execution } from '../models';
import { withChildUsage } from './subAgents';
import type { AuthContext } from './tokens';

export type UsagePeriod = 'daily' | 'weekly' | 'monthly';
const DAY = 86_400_000;
export const MAX_USAGE_DAYS = 366;

interface Counter {
  executions: number;
  completed: number;
  failed: number;
  cancelled: number;
  input_tokens: number;
  output_tokens: number;
}

const zero = (): Counter => ({
  executions: 0,
  completed: 0,
  failed: 0,
  cancelled: 0,
  input_tokens: 0,
  output_tokens: 0,
});

function bucketStart(d: Date, period: UsagePeriod): string {
  const day = new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate()));
  if (period === 'monthly') day.setUTCDate(1);
  if (period === 'weekly') day.setUTCDate(day.getUTCDate() - ((day.getUTCDay() + 6) % 7));
  return day.toISOString().slice(0, 10);
}

function add(c: Counter, status: string, input: number, output: number): void {
  c.executions += 1;
  if (status === 'completed' || status === 'failed' || status === 'cancelled') c[status] += 1;
  c.input_tokens += input;
  c.output_tokens += output;
}

/**
 * @param auth the caller (its organization only).
 * @param query period and inclusive UTC dates `YYYY-MM-DD` (default: the last 30 days).
 * @returns totals, per-period buckets (every bucket of the range, zeros included) and per-agent totals.
 */
export async function organizationUsage(
  auth: AuthContext,
  query: { period: UsagePeriod; start?: string; end?: string }
): Promise<Record<string, unknown>> {
  const end = query.end ? new Date(`${query.end}T00:00:00.000Z`) : new Date(Date.now() - (Date.now() % DAY));
  const start = query.start ? new Date(`${query.start}T00:00:00.000Z`) : new Date(end.getTime() - 29 * DAY);
  if (Number.isNaN(start.getTime()) || Number.isNaN(end.getTime()))
    throw new ValidationError('start and end must be dates (YYYY-MM-DD)');
  if (start > end) throw new ValidationError('start must not be after end');
  if ((end.getTime() - start.getTime()) / DAY + 1 > MAX_USAGE_DAYS)
    throw new ValidationError(`The range may span at most ${MAX_USAGE_DAYS} days`);

  const buckets = new Map<string, { total: Counter; agents: Map<string, Counter> }>();
  for (let t = start.getTime(); t <= end.getTime(); t += DAY) {
    const key = bucketStart(new Date(t), query.period);
    if (!buckets.has(key)) buckets.set(key, { total: zero(), agents: new Map() });
  }
  const totals = zero();
  const perAgent = new Map<string, Counter>();
  const cursor = Execution.find({
    organizationId: auth.organizationId,
    createdAt: mongoose.trusted({ $gte: start, $lt: new Date(end.getTime() + DAY) }),
  })
    .select({ agentId: 1, status: 1, usage: 1, childUsage: 1, createdAt: 1 })
    .lean()
    .cursor();
  for await (const e of cursor) {
    // An execution's usage includes its sub-agents' (commands/subAgents.ts), which count as their own agents'.
    const children = withChildUsage({ inputTokens: 0, outputTokens: 0 }, e.childUsage);
    const input = (e.usage?.inputTokens ?? 0) - children.inputTokens;
    const output = (e.usage?.outputTokens ?? 0) - children.outputTokens;
    const bucket = buckets.get(bucketStart(e.createdAt as Date, query.period));
    if (!bucket) continue;
    add(bucket.total, e.status, input, output);
    const a = bucket.agents.get(e.agentId) ?? zero();
    add(a, e.status, input, output);
    bucket.agents.set(e.agentId, a);
    add(totals, e.status, input, output);
    const pa = perAgent.get(e.agentId) ?? zero();
    add(pa, e.status, input, output);
    perAgent.set(e.agentId, pa);
  }
  return {
    organizationId: auth.organizationId,
    period: query.period,
    start: start.toISOString().slice(0, 10),
    end: end.toISOString().slice(0, 10),
    totals,
    periods: [...buckets.entries()].map(([key, b]) => ({
      start: key,
      ...b.total,
      agents: [...b.agents.entries()].map(([agentId, c]) => ({ agentId, ...c })),
    })),
    agents: [...perAgent.entries()].map(([agentId, c]) => ({ agentId, ...c })),
  };
}
