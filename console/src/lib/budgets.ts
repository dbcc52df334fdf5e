/**
 * The Usage page's budgets (GET/POST/PATCH/DELETE /api/budgets, docs/spend.md): labels, amounts and a budget's state
 * for people, and the check of a limit typed into a form. Pure: tested in budgets.test.ts.
 */
import { formatUsd } from './usageSeries';

export type BudgetScope = 'organization' | 'agent' | 'mission';
export type BudgetPeriod = 'day' | 'month' | 'run';
export type BudgetUnit = 'tokens' | 'usd';

/** What the page reads of a budget. */
export interface BudgetView {
  id: string;
  name: string;
  scope: BudgetScope;
  target_id: string | null;
  period: BudgetPeriod;
  unit: BudgetUnit;
  limit: number;
  spent: number | null;
  percent: number | null;
  reached: boolean;
}

export const SCOPE_CHOICES: { value: BudgetScope; label: string }[] = [
  { value: 'organization', label: 'The whole organization' },
  { value: 'agent', label: 'One agent' },
  { value: 'mission', label: 'One mission' },
];
export const PERIOD_CHOICES: { value: BudgetPeriod; label: string }[] = [
  { value: 'day', label: 'Per day (UTC)' },
  { value: 'month', label: 'Per month (UTC)' },
  { value: 'run', label: 'Per run' },
];
export const UNIT_CHOICES: { value: BudgetUnit; label: string }[] = [
  { value: 'usd', label: 'US dollars' },
  { value: 'tokens', label: 'Tokens' },
];

/** The largest limit the service takes. */
const MAX_LIMIT = 1e15;

/**
 * @param value an amount in the budget's unit.
 * @param unit tokens or usd.
 * @returns it for people (`12,000 tokens`, `$4.50`).
 */
export function formatAmount(value: number, unit: BudgetUnit): string {
  return unit === 'usd' ? formatUsd(value) : `${Math.round(value).toLocaleString('en-US')} tokens`;
}

/**
 * @param b the budget.
 * @param names agent and mission names by id (a target no longer listed keeps its id).
 * @returns what the budget covers.
 */
export function budgetCovers(b: Pick<BudgetView, 'scope' | 'target_id'>, names: ReadonlyMap<string, string>): string {
  if (b.scope === 'organization') return 'Organization';
  const target = b.target_id ? (names.get(b.target_id) ?? b.target_id) : '?';
  return `${b.scope === 'agent' ? 'Agent' : 'Mission'} ${target}`;
}

/**
 * @param b the budget.
 * @returns its state: reached (new work is refused, running work stops at its next model call), near (80 % or more:
 *   the threshold event went out), or under; a per-run budget counts each execution on its own.
 */
export function budgetState(b: Pick<BudgetView, 'period' | 'percent' | 'reached'>): {
  label: string;
  color: string;
} {
  if (b.period === 'run') return { label: 'Each run', color: 'gray' };
  if (b.reached) return { label: 'Reached', color: 'red' };
  if ((b.percent ?? 0) >= 80) return { label: 'Above 80 %', color: 'orange' };
  return { label: 'Under', color: 'green' };
}

/**
 * @param text a limit as typed.
 * @returns why it is not a limit the service takes, or null.
 */
export function limitProblem(text: string): string | null {
  const n = Number(text.trim());
  if (text.trim() === '' || !Number.isFinite(n)) return 'Type a number.';
  if (n <= 0) return 'The limit must be above 0.';
  if (n > MAX_LIMIT) return 'The limit is too large.';
  return null;
}
