/** The Usage page's budgets: labels, amounts, states and the limit's check (lib/budgets.ts). */
import { budgetCovers, budgetState, formatAmount, limitProblem } from './budgets';

it('writes amounts in the budget’s unit', () => {
  expect(formatAmount(12000, 'tokens')).toBe('12,000 tokens');
  expect(formatAmount(4.5, 'usd')).toBe('$4.50');
  expect(formatAmount(0.0123, 'usd')).toBe('$0.0123');
});

it('says what a budget covers, by name where the target is listed', () => {
  const names = new Map([['agt_1', 'Writer']]);
  expect(budgetCovers({ scope: 'organization', target_id: null }, names)).toBe('Organization');
  expect(budgetCovers({ scope: 'agent', target_id: 'agt_1' }, names)).toBe('Agent Writer');
  expect(budgetCovers({ scope: 'mission', target_id: 'msn_9' }, names)).toBe('Mission msn_9');
});

it('gives a budget’s state: reached, above 80 %, under, or counted per run', () => {
  expect(budgetState({ period: 'day', percent: 100, reached: true })).toEqual({ label: 'Reached', color: 'red' });
  expect(budgetState({ period: 'month', percent: 80, reached: false })).toEqual({
    label: 'Above 80 %',
    color: 'orange',
  });
  expect(budgetState({ period: 'day', percent: 79, reached: false })).toEqual({ label: 'Under', color: 'green' });
  expect(budgetState({ period: 'run', percent: null, reached: false })).toEqual({ label: 'Each run', color: 'gray' });
});

it('checks a typed limit as the service does', () => {
  expect(limitProblem('10')).toBeNull();
  expect(limitProblem('0.5')).toBeNull();
  expect(limitProblem('')).toBe('Type a number.');
  expect(limitProblem('ten')).toBe('Type a number.');
  expect(limitProblem('0')).toBe('The limit must be above 0.');
  expect(limitProblem('-3')).toBe('The limit must be above 0.');
  expect(limitProblem('1e16')).toBe('The limit is too large.');
});
