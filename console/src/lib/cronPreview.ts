/**
 * A mission's cron schedule, previewed before it is sent: the expression checked as the service checks it (5 fields,
 * croner, an IANA time zone) and its next runs written in the reader's own time zone.
 */
import { Cron } from 'croner';

export type CronPreview = { ok: true; runs: Date[] } | { ok: false; message: string };

/** @returns the browser's time zone (IANA), UTC when it has none. */
export function browserTimeZone(): string {
  try {
    return Intl.DateTimeFormat().resolvedOptions().timeZone || 'UTC';
  } catch {
    return 'UTC';
  }
}

/**
 * @param tz a time zone name.
 * @returns whether the runtime knows it.
 */
export function isTimeZone(tz: string): boolean {
  if (!tz.trim()) return false;
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: tz });
    return true;
  } catch {
    return false;
  }
}

/**
 * @param expression a 5-field cron expression (minute hour day month weekday).
 * @param timezone the IANA time zone it runs in.
 * @param count how many runs to preview.
 * @param from the time after which runs are counted (default now).
 * @returns the next runs, or a sentence saying what is wrong.
 */
export function cronPreview(expression: string, timezone: string, count = 5, from?: Date): CronPreview {
  const value = expression.trim().replace(/\s+/g, ' ');
  if (!value) return { ok: false, message: 'Enter a cron expression, for example 0 9 * * 1-5.' };
  if (!isTimeZone(timezone)) return { ok: false, message: `${timezone || 'That'} is not a known time zone.` };
  if (value.split(' ').length !== 5)
    return {
      ok: false,
      message: 'A cron expression has 5 fields: minute hour day-of-month month day-of-week (for example 0 9 * * 1-5).',
    };
  try {
    const cron = new Cron(value, { timezone });
    const runs = cron.nextRuns(count, from ?? new Date());
    if (runs.length === 0) return { ok: false, message: 'This schedule never runs.' };
    return { ok: true, runs };
  } catch (err) {
    return { ok: false, message: `That cron expression is not valid: ${(err as Error).message}` };
  }
}

/**
 * @param date a run time.
 * @param timeZone the reader's time zone.
 * @param locale the reader's locale (default the browser's).
 * @returns the time as a person reads it, with its zone (e.g. "Mon, 7 Dec 2026, 09:00 CET").
 */
export function formatRun(date: Date, timeZone: string, locale?: string): string {
  return new Intl.DateTimeFormat(locale, {
    weekday: 'short',
    year: 'numeric',
    month: 'short',
    day: 'numeric',
    hour: '2-digit',
    minute: '2-digit',
    timeZone,
    timeZoneName: 'short',
  }).format(date);
}

/**
 * @param s a mission's stored schedule.
 * @param timeZone the reader's time zone (for a `once` time).
 * @returns it in words: the cron expression with its zone, the one time, or manual.
 */
export function scheduleText(s: { type: string; value: string | null; timezone: string }, timeZone: string): string {
  if (s.type === 'cron') return `${s.value ?? ''} (${s.timezone})`;
  if (s.type === 'once') return s.value ? `once, ${formatRun(new Date(s.value), timeZone)}` : 'once';
  return 'manual';
}
