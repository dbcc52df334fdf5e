/** A mission's runs per day by outcome (lib/runHistory.ts), for its chart. */
import { dayIn, runOutcome, runsPerDay } from './runHistory';

it('sorts a job’s status into an outcome', () => {
  expect(runOutcome('completed')).toBe('completed');
  expect(runOutcome('failed')).toBe('failed');
  expect(runOutcome('cancelled')).toBe('failed');
  for (const s of ['queued', 'running', 'awaiting_review', 'blocked']) expect(runOutcome(s)).toBe('open');
});

it('counts runs per day of the reader’s time zone, oldest day first', () => {
  const runs = [
    { created_at: '2026-12-02T23:30:00Z', status: 'completed' }, // the 3rd in Tokyo
    { created_at: '2026-12-02T10:00:00Z', status: 'failed' },
    { created_at: '2026-12-01T10:00:00Z', status: 'completed' },
    { created_at: '2026-12-02T11:00:00Z', status: 'running' },
    { created_at: '2026-12-02T12:00:00Z', status: 'completed' },
    { created_at: null, status: 'queued' },
  ];
  expect(runsPerDay(runs, 'UTC')).toEqual([
    { day: '2026-12-01', completed: 1, failed: 0, open: 0 },
    { day: '2026-12-02', completed: 2, failed: 1, open: 1 },
  ]);
  expect(runsPerDay(runs, 'Asia/Tokyo')).toEqual([
    { day: '2026-12-01', completed: 1, failed: 0, open: 0 },
    { day: '2026-12-02', completed: 1, failed: 1, open: 1 },
    { day: '2026-12-03', completed: 1, failed: 0, open: 0 },
  ]);
  expect(runsPerDay([], 'UTC')).toEqual([]);
  expect(dayIn(new Date('2026-12-31T23:59:00Z'), 'America/Los_Angeles')).toBe('2026-12-31');
});
