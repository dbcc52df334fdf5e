/**
 * Backfill [docs/decisions.md "Schedule policies"]: a mission runs for the times of its schedule in a past range,
 * through its Temporal Schedule's own backfill (`ScheduleHandle.backfill`): each time becomes a run
 * `mission-run-<id>-<time>` as if the Schedule had fired then, with the overlap policy given (default: the
 * schedule's). Temporal takes the request once and keeps it (the scheduler's own state), so a worker dying
 * meanwhile delays runs but loses or repeats none; a time that already ran keeps its run (same workflow id, same
 * job). The range is bounded: more than {@link MAX_BACKFILL_RUNS} runs is refused before anything starts.
 */
import { Cron } from 'croner';
import { ConflictError, ValidationError } from '../lib/errors';
import type { OverlapPolicy } from '../models';
import { missionScheduleId } from '../workflows/ids';
import type { ExecutionDeps } from './executionStart';
import { findMission } from './missions';
import {
  DURATION_BOUNDS,
  parseDuration,
  storedSchedule,
  temporalOverlap,
  type MissionSchedule,
} from './missionSchedules';
import type { AuthContext } from './tokens';

/** The most runs one backfill may start. */
export const MAX_BACKFILL_RUNS = 100;

/**
 * Counts the schedule's times in a range, both ends included (as Temporal's backfill takes them), stopping past
 * `limit`.
 * @param schedule the mission's schedule.
 * @param start start of the range.
 * @param end end of the range.
 * @param limit the count past which counting stops.
 * @returns the number of times (at most limit + 1).
 */
export function countRuns(schedule: MissionSchedule, start: Date, end: Date, limit: number): number {
  if (schedule.type === 'once') {
    const at = new Date(schedule.value!).getTime();
    return at >= start.getTime() && at <= end.getTime() ? 1 : 0;
  }
  if (schedule.type === 'interval') {
    // Temporal's interval times are the multiples of the interval since the epoch (no phase is set).
    const every = parseDuration(schedule.value!, 'schedule.value', DURATION_BOUNDS.value);
    const n = Math.floor(end.getTime() / every) - Math.ceil(start.getTime() / every) + 1;
    return Math.min(Math.max(n, 0), limit + 1);
  }
  if (schedule.type === 'cron') {
    const cron = new Cron(schedule.value!, { timezone: schedule.timezone });
    let n = 0;
    let at = cron.nextRun(new Date(start.getTime() - 1));
    while (at && at.getTime() <= end.getTime() && n <= limit) {
      n++;
      at = cron.nextRun(at);
    }
    return n;
  }
  return 0;
}

export interface BackfillInput {
  start: string;
  end: string;
  overlap?: OverlapPolicy;
}

/**
 * Runs a mission for the times of its schedule in a past range.
 * @param deps Temporal.
 * @param auth the caller.
 * @param id the mission.
 * @param input the range and the overlap policy of these runs.
 * @returns the range, the policy and the number of runs.
 * @throws ValidationError for a range that is empty, in the future, holds no time or more than the limit;
 *   ConflictError for a paused mission (its runs would do nothing).
 */
export async function backfillMission(
  deps: Pick<ExecutionDeps, 'temporal'>,
  auth: AuthContext,
  id: string,
  input: BackfillInput
): Promise<{ missionId: string; start: Date; end: Date; overlap: OverlapPolicy; runs: number }> {
  const mission = await findMission(auth, id);
  const start = new Date(input.start);
  const end = new Date(input.end);
  if (Number.isNaN(start.getTime())) throw new ValidationError('Invalid start: expected an ISO 8601 time');
  if (Number.isNaN(end.getTime())) throw new ValidationError('Invalid end: expected an ISO 8601 time');
  if (start.getTime() >= end.getTime()) throw new ValidationError('Invalid range: start must be before end');
  if (end.getTime() > Date.now()) throw new ValidationError('Invalid end: a backfill covers a past range only');
  const schedule = storedSchedule(mission);
  if (schedule.type === 'manual')
    throw new ValidationError('Invalid range: a manual mission has no times to backfill (trigger it instead)');
  if (mission.status !== 'active') throw new ConflictError('Mission is paused: resume it before a backfill');
  const runs = countRuns(schedule, start, end, MAX_BACKFILL_RUNS);
  if (runs === 0) throw new ValidationError('Invalid range: the schedule has no time in it');
  if (runs > MAX_BACKFILL_RUNS)
    throw new ValidationError(
      `Invalid range: it holds more than ${MAX_BACKFILL_RUNS} runs of the schedule; backfill a shorter range`
    );
  const overlap = input.overlap ?? schedule.overlap;
  await deps.temporal.client.schedule
    .getHandle(missionScheduleId(mission._id))
    .backfill({ start, end, overlap: temporalOverlap(overlap) });
  return { missionId: mission._id, start, end, overlap, runs };
}
