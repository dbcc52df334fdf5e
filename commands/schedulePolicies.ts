/**
 * The policies of a mission's schedule [docs/decisions.md "Schedule policies"]: what clients send (overlap,
 * catch-up window, pause-on-failure, jitter), validated, and their form on a Temporal Schedule. Durations are a
 * whole number and one unit (`30s`, `10m`, `2h`, `1d`).
 */
import type { ScheduleOverlapPolicy } from '@temporalio/client';
import { ValidationError } from '../lib/errors';
import { OVERLAP_POLICIES, type OverlapPolicy } from '../models/Mission';

/** A schedule's policies as clients send them (each one omitted: kept on update, its default on create). */
export interface SchedulePolicyInput {
  overlap?: OverlapPolicy;
  catchupWindow?: string | null;
  pauseOnFailure?: boolean;
  jitter?: string | null;
}

/** A schedule's policies as stored. */
export interface SchedulePolicies {
  overlap: OverlapPolicy;
  catchupWindow: string | null;
  pauseOnFailure: boolean;
  jitter: string | null;
}

/** The policies of a schedule that names none: every run starts, Temporal's catch-up window, no jitter. */
export const DEFAULT_POLICIES = {
  overlap: 'allow_all',
  catchupWindow: null,
  pauseOnFailure: false,
  jitter: null,
} as const satisfies SchedulePolicies;

/** Temporal's own default catch-up window (one year, as the SDK's `'1 year'`), set again when a client clears one. */
const DEFAULT_CATCHUP_MS = 365.25 * 24 * 3600 * 1000;

const UNIT_MS = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;

/** Bounds of each duration field, in milliseconds (Temporal refuses a catch-up window under 10 s). */
export const DURATION_BOUNDS = {
  value: { min: 1000, max: 366 * UNIT_MS.d },
  catchupWindow: { min: 10_000, max: 366 * UNIT_MS.d },
  jitter: { min: 0, max: UNIT_MS.d },
} as const;

/**
 * @param text a duration as clients write it: a whole number and a unit, `s`, `m`, `h` or `d` (`30s`, `10m`).
 * @param field the field, for the message (`schedule.catchupWindow`).
 * @param bounds the smallest and largest duration accepted, in milliseconds.
 * @returns the duration in milliseconds.
 * @throws ValidationError naming the field.
 */
export function parseDuration(text: string, field: string, bounds: { min: number; max: number }): number {
  const m = /^(\d{1,6})(s|m|h|d)$/.exec(text.trim());
  if (!m) throw new ValidationError(`Invalid ${field}: expected a duration such as 30s, 10m, 2h or 1d`);
  const ms = Number(m[1]) * UNIT_MS[m[2] as keyof typeof UNIT_MS];
  if (ms < bounds.min || ms > bounds.max)
    throw new ValidationError(
      `Invalid ${field}: must be between ${bounds.min / 1000}s and ${bounds.max / UNIT_MS.d}d (got ${text.trim()})`
    );
  return ms;
}

/**
 * @param input the client's policies.
 * @param before the values an omitted field keeps.
 * @returns the policies, validated.
 */
export function parsePolicies(input: SchedulePolicyInput, before: SchedulePolicies): SchedulePolicies {
  const overlap = input.overlap ?? before.overlap;
  if (!(OVERLAP_POLICIES as readonly string[]).includes(overlap))
    throw new ValidationError(`Invalid schedule.overlap: must be one of ${OVERLAP_POLICIES.join(', ')}`);
  const duration = (value: string | null | undefined, old: string | null, field: 'catchupWindow' | 'jitter') => {
    if (value === undefined) return old;
    if (value === null) return null;
    parseDuration(value, `schedule.${field}`, DURATION_BOUNDS[field]);
    return value.trim();
  };
  return {
    overlap,
    catchupWindow: duration(input.catchupWindow, before.catchupWindow, 'catchupWindow'),
    pauseOnFailure: input.pauseOnFailure ?? before.pauseOnFailure,
    jitter: duration(input.jitter, before.jitter, 'jitter'),
  };
}

/**
 * @param overlap a mission's overlap policy.
 * @returns Temporal's name of it.
 */
export function temporalOverlap(overlap: OverlapPolicy): ScheduleOverlapPolicy {
  return overlap.toUpperCase() as ScheduleOverlapPolicy;
}

/**
 * @param schedule a stored schedule.
 * @returns the Schedule's policies (every one set, so an update also clears what the client cleared).
 */
export function schedulePolicies(schedule: SchedulePolicies) {
  return {
    overlap: temporalOverlap(schedule.overlap),
    catchupWindow: schedule.catchupWindow
      ? parseDuration(schedule.catchupWindow, 'schedule.catchupWindow', DURATION_BOUNDS.catchupWindow)
      : DEFAULT_CATCHUP_MS,
    pauseOnFailure: schedule.pauseOnFailure,
  };
}
