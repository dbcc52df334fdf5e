/**
 * Skipped and missed runs of a mission, recorded as `mission.run_skipped` events [docs/decisions.md "Schedule
 * policies"]. Temporal's scheduler keeps what it did not run only as counters in the Schedule's info
 * (`numActionsSkippedOverlap`, `numActionsMissedCatchupWindow`): no workflow runs for a skip, so nothing of ours
 * sees it happen. {@link recordScheduleSkips} reads those counters and records one event per unit of each counter
 * not yet recorded, keyed by (mission, Schedule, reason, ordinal): reading the same counters twice, from two runs
 * at once or after a crash between the events and the mark, records nothing twice. The mark on the mission
 * (`skipsRecorded`) only spares the repeats their inserts.
 *
 * It runs at the start and at the end of every mission run (workflows/missionRun.ts, an activity: retried until
 * it succeeds), where skips happen: an overlap skip happens while a run is going, so the run's end sees it; a run
 * missed while the engine was down is counted when the scheduler wakes up, just before the run it still starts.
 * And it runs on a worker's start-up for every mission with a timed schedule, for a Schedule whose skips no later
 * run would see (activities/missions.ts `recordAllScheduleSkips`).
 */
import { ScheduleNotFoundError, type Client, type ScheduleDescription } from '@temporalio/client';
import type { Logger } from '../lib/logger';
import type { TemporalDeps } from '../lib/temporal';
import { Mission, type MissionDoc, type SkipReason } from '../models';
import { missionScheduleId } from '../workflows/ids';
import { storedSchedule, syncSchedule, temporalOverlap } from './missionSchedules';
import { recordEvents, type EventDeps } from './serviceEvents';
import { webhookDispatcher } from './webhookDispatch';

/** The most events one reading records per reason (a later reading records the rest). */
const MAX_PER_READING = 500;

/**
 * @param mission the mission.
 * @param createdAt when its Schedule was created.
 * @param reason overlap or missed catch-up window.
 * @param ordinal which skip of that reason (1, 2, …).
 * @returns the key of that skip's event.
 */
export const skipKey = (mission: string, createdAt: Date, reason: SkipReason, ordinal: number): string =>
  `mission-skip:${mission}:${createdAt.getTime()}:${reason}:${ordinal}`;

/**
 * Records the mission's skipped and missed runs that the Schedule counted and no event names yet.
 * @param client a Temporal client.
 * @param deps the event dispatcher.
 * @param missionId the mission.
 * @returns how many events this call recorded or repeated, by reason (0 and 0 when the Schedule is gone).
 */
export async function recordScheduleSkips(
  client: Client,
  deps: EventDeps,
  missionId: string
): Promise<{ overlap: number; missed: number }> {
  const mission = await Mission.findById(missionId).lean<MissionDoc>();
  if (!mission) return { overlap: 0, missed: 0 };
  const described = await describeSchedule(client, mission._id);
  return described ? recordSkipsOf(mission, described.info, deps) : { overlap: 0, missed: 0 };
}

/**
 * @param client a Temporal client.
 * @param missionId a mission.
 * @returns its Schedule's description, or null when it is gone.
 */
async function describeSchedule(client: Client, missionId: string): Promise<ScheduleDescription | null> {
  try {
    return await client.schedule.getHandle(missionScheduleId(missionId)).describe();
  } catch (err) {
    if (err instanceof ScheduleNotFoundError) return null;
    throw err;
  }
}

/**
 * @param mission the mission.
 * @param info its Schedule's info (the counters).
 * @param deps the event dispatcher.
 * @returns how many events this call recorded or repeated, by reason.
 */
async function recordSkipsOf(
  mission: MissionDoc,
  info: ScheduleDescription['info'],
  deps: EventDeps
): Promise<{ overlap: number; missed: number }> {
  const mark = mission.skipsRecorded;
  const same = mark?.scheduleCreatedAt && new Date(mark.scheduleCreatedAt).getTime() === info.createdAt.getTime();
  const from = { overlap: same ? (mark?.overlap ?? 0) : 0, missed: same ? (mark?.missed ?? 0) : 0 };
  const to = {
    overlap: Math.min(info.numActionsSkippedOverlap, from.overlap + MAX_PER_READING),
    missed: Math.min(info.numActionsMissedCatchupWindow, from.missed + MAX_PER_READING),
  };
  const events = [];
  for (const [field, reason] of [
    ['overlap', 'overlap'],
    ['missed', 'missed_catchup_window'],
  ] as const)
    for (let n = from[field] + 1; n <= to[field]; n++)
      events.push({
        type: 'mission.run_skipped' as const,
        data: { mission_id: mission._id, reason, count: n },
        key: skipKey(mission._id, info.createdAt, reason, n),
      });
  if (events.length === 0) return { overlap: 0, missed: 0 };
  await recordEvents(mission.organizationId, events, deps);
  // The mark only moves forward (two readings at once: the larger wins), and restarts with a new Schedule.
  const filter = same
    ? { _id: mission._id, 'skipsRecorded.scheduleCreatedAt': info.createdAt }
    : { _id: mission._id, 'skipsRecorded.scheduleCreatedAt': mark?.scheduleCreatedAt ?? null };
  await Mission.updateOne(
    filter,
    same
      ? { $max: { 'skipsRecorded.overlap': to.overlap, 'skipsRecorded.missed': to.missed } }
      : {
          $set: {
            skipsRecorded: { scheduleCreatedAt: info.createdAt, overlap: to.overlap, missed: to.missed },
          },
        }
  );
  return { overlap: to.overlap - from.overlap, missed: to.missed - from.missed };
}

/**
 * A worker's start-up pass over every mission Schedule (Temporal's list of Schedules, so no query across
 * organizations): records the skips no run has recorded yet (a Schedule that has not run since), and brings a
 * Schedule made before its mission had policies in line with it (Temporal's own default overlap is `skip`; a
 * mission's default is `allow_all`). Each failure is logged and the pass goes on; a later start-up or run catches up.
 * @param temporal the worker process's client and task queue.
 * @param logger the process's logger.
 * @returns how many Schedules were read.
 */
export async function reconcileMissionSchedules(
  temporal: Pick<TemporalDeps, 'client' | 'taskQueue'>,
  logger: Logger
): Promise<number> {
  const log = logger.child({ component: 'missions' });
  const deps: EventDeps = { dispatchEvent: webhookDispatcher(temporal, logger) };
  let read = 0;
  try {
    for await (const summary of temporal.client.schedule.list()) {
      const prefix = missionScheduleId('');
      if (!summary.scheduleId.startsWith(prefix)) continue;
      const missionId = summary.scheduleId.slice(prefix.length);
      try {
        const mission = await Mission.findById(missionId).lean<MissionDoc>();
        const described = mission && (await describeSchedule(temporal.client, missionId));
        if (!mission || !described) continue;
        read++;
        const schedule = storedSchedule(mission);
        if (
          described.policies.overlap !== temporalOverlap(schedule.overlap) ||
          described.policies.pauseOnFailure !== schedule.pauseOnFailure
        )
          await syncSchedule({ temporal: temporal as TemporalDeps }, mission, true);
        await recordSkipsOf(mission, described.info, deps);
      } catch (err) {
        log.warn({ err, missionId }, 'cannot reconcile the mission’s Schedule (its next run or start-up will)');
      }
    }
  } catch (err) {
    log.warn({ err }, 'cannot list the mission Schedules (the next start-up will)');
  }
  return read;
}
