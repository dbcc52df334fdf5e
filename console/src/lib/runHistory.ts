/**
 * A mission's run history as a chart reads it: its jobs (one per run) counted per day, in the reader's time zone,
 * by outcome.
 */

export type RunOutcome = 'completed' | 'failed' | 'open';

export interface RunDay {
  /** The day, `YYYY-MM-DD` in the reader's time zone. */
  day: string;
  completed: number;
  failed: number;
  open: number;
}

/**
 * @param status a job's status.
 * @returns its outcome: completed, failed (failed or cancelled), or open (still queued, running, waiting).
 */
export function runOutcome(status: string): RunOutcome {
  if (status === 'completed') return 'completed';
  if (status === 'failed' || status === 'cancelled') return 'failed';
  return 'open';
}

/**
 * @param date a time.
 * @param timeZone the reader's time zone.
 * @returns its day there, `YYYY-MM-DD`.
 */
export function dayIn(date: Date, timeZone: string): string {
  const parts = new Intl.DateTimeFormat('en-CA', { timeZone, year: 'numeric', month: '2-digit', day: '2-digit' })
    .formatToParts(date)
    .reduce<Record<string, string>>((acc, p) => ({ ...acc, [p.type]: p.value }), {});
  return `${parts.year}-${parts.month}-${parts.day}`;
}

/**
 * @param runs the runs (jobs) with their creation time and status; those without a time are left out.
 * @param timeZone the reader's time zone.
 * @returns one row per day that had runs, oldest first.
 */
export function runsPerDay(runs: { created_at: string | null; status: string }[], timeZone: string): RunDay[] {
  const days = new Map<string, RunDay>();
  for (const r of runs) {
    if (!r.created_at) continue;
    const at = new Date(r.created_at);
    if (Number.isNaN(at.getTime())) continue;
    const day = dayIn(at, timeZone);
    const row = days.get(day) ?? { day, completed: 0, failed: 0, open: 0 };
    row[runOutcome(r.status)] += 1;
    days.set(day, row);
  }
  return [...days.values()].sort((a, b) => a.day.localeCompare(b.day));
}
