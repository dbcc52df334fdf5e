/**
 * A mission's schedule and its Temporal Schedule [docs/decisions.md "Missions"]: what clients send (cron, once or
 * manual) validated and normalized, translated into the Schedule `mission-<id>` that fires workflow `missionRun`,
 * and kept in line with the mission (created, updated, described, deleted). Creating and updating the Schedule are
 * idempotent (create, or update the one that exists).
 */
import {
  ScheduleAlreadyRunning,
  ScheduleNotFoundError,
  type ScheduleOptions,
  type ScheduleSpec,
} from '@temporalio/client';
import { Cron } from 'croner';
import { ValidationError } from '../lib/errors';
import type { MissionDoc } from '../models';
import { missionScheduleId } from '../workflows/ids';
import type { missionRun } from '../workflows/missionRun';
import { agentIdKey, organizationIdKey, workKindKey } from '../workflows/searchAttributes';
import type { ExecutionDeps } from './executionStart';

/** A schedule as clients send it: cron (5 fields, IANA timezone, default UTC), once (an ISO time), or none. */
export type ScheduleInput = { type: 'cron'; value: string; timezone?: string } | { type: 'once'; value: string };

export interface MissionSchedule {
  type: 'cron' | 'once' | 'manual';
  value: string | null;
  timezone: string;
}

/**
 * @param tz a time zone name.
 * @returns whether the runtime knows it (IANA names, as Temporal's server does).
 */
function isTimeZone(tz: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: tz });
    return true;
  } catch {
    return false;
  }
}

/**
 * A schedule as the routes and the MCP tools receive it (`manual` → none; a missing value → 400 naming it).
 * @param s the body's schedule.
 * @returns the schedule parseSchedule takes.
 */
export function scheduleInput(
  s: { type: 'cron' | 'once' | 'manual'; value?: string; timezone?: string } | undefined
): ScheduleInput | null | undefined {
  if (s === undefined) return undefined;
  if (s.type === 'manual') return null;
  if (s.value === undefined) throw new ValidationError('Missing required field: schedule.value');
  return s.type === 'cron' ? { type: 'cron', value: s.value, timezone: s.timezone } : { type: 'once', value: s.value };
}

/** The years a `once` schedule may name (what the workflow engine's calendar specs accept). */
export const SCHEDULE_YEARS = { first: 2000, last: 2100 } as const;

/**
 * Validates and normalizes a schedule (the cron expression by croner, the time zone by Intl).
 * @param input what the client sent (null or undefined: manual).
 * @returns the stored schedule.
 * @throws ValidationError naming `schedule.value` or `schedule.timezone`.
 */
export function parseSchedule(input: ScheduleInput | null | undefined): MissionSchedule {
  if (!input) return { type: 'manual', value: null, timezone: 'UTC' };
  if (input.type === 'once') {
    const at = new Date(input.value);
    if (!/^\d{4}-\d{2}-\d{2}T/.test(input.value) || Number.isNaN(at.getTime()))
      throw new ValidationError('Invalid schedule.value: expected an ISO 8601 time such as 2030-01-01T09:00:00Z');
    // Temporal's calendar specs cover these years only [docs/decisions.md "Security"].
    const year = at.getUTCFullYear();
    if (year < SCHEDULE_YEARS.first || year > SCHEDULE_YEARS.last)
      throw new ValidationError(
        `Invalid schedule.value: the time must fall in the years ${SCHEDULE_YEARS.first} to ${SCHEDULE_YEARS.last}`
      );
    return { type: 'once', value: at.toISOString(), timezone: 'UTC' };
  }
  const timezone = input.timezone ?? 'UTC';
  if (!isTimeZone(timezone))
    throw new ValidationError(`Invalid schedule.timezone: ${timezone} is not an IANA time zone`);
  const value = input.value.trim().replace(/\s+/g, ' ');
  if (value.split(' ').length !== 5)
    throw new ValidationError('Invalid schedule.value: a cron expression has 5 fields (minute hour day month weekday)');
  try {
    new Cron(value, { timezone });
  } catch (err) {
    throw new ValidationError(`Invalid schedule.value: ${(err as Error).message}`);
  }
  return { type: 'cron', value, timezone };
}

/**
 * @param schedule a stored schedule.
 * @returns the Temporal Schedule's spec (manual: no times; it runs when triggered).
 */
function scheduleSpec(schedule: MissionSchedule): ScheduleSpec {
  if (schedule.type === 'cron') return { cronExpressions: [schedule.value!], timezone: schedule.timezone };
  if (schedule.type === 'once') {
    const at = new Date(schedule.value!);
    const months = [
      'JANUARY',
      'FEBRUARY',
      'MARCH',
      'APRIL',
      'MAY',
      'JUNE',
      'JULY',
      'AUGUST',
      'SEPTEMBER',
      'OCTOBER',
      'NOVEMBER',
      'DECEMBER',
    ] as const;
    return {
      calendars: [
        {
          year: at.getUTCFullYear(),
          month: months[at.getUTCMonth()],
          dayOfMonth: at.getUTCDate(),
          hour: at.getUTCHours(),
          minute: at.getUTCMinutes(),
          second: at.getUTCSeconds(),
        },
      ],
      timezone: 'UTC',
    };
  }
  return {};
}

/**
 * The Schedule of a mission, as Temporal takes it.
 * @param deps Temporal.
 * @param mission the mission.
 * @returns the schedule's options.
 */
function scheduleOptions(deps: Pick<ExecutionDeps, 'temporal'>, mission: MissionDoc): ScheduleOptions {
  const schedule = mission.schedule as MissionSchedule;
  return {
    scheduleId: missionScheduleId(mission._id),
    spec: scheduleSpec(schedule),
    action: {
      type: 'startWorkflow',
      workflowType: 'missionRun',
      workflowId: `mission-run-${mission._id}`,
      taskQueue: deps.temporal.taskQueue,
      args: [{ missionId: mission._id }] as Parameters<typeof missionRun>,
      typedSearchAttributes: [
        { key: organizationIdKey, value: mission.organizationId },
        { key: agentIdKey, value: mission.agentId },
        { key: workKindKey, value: 'mission-run' },
      ],
      memo: { missionId: mission._id }, // ids only: no user text (docs/decisions.md "Observability: private payloads")
    },
    memo: { missionId: mission._id, organizationId: mission.organizationId },
    state: {
      paused: mission.status === 'paused',
      note: mission.status === 'paused' ? 'paused through the api' : undefined,
      ...(schedule.type === 'once' ? { remainingActions: 1 } : {}),
    },
  };
}

/**
 * Creates the mission's Schedule, or brings the existing one in line with the mission (idempotent): spec, action,
 * remaining actions and the paused state in one update. A new mission tries the create first, a stored one the
 * update first (one Temporal round trip fewer each: every call is a chance for a slow server to answer 503); each
 * falls back to the other.
 * @param deps Temporal.
 * @param mission the mission as stored.
 * @param known whether the mission existed before this call (its Schedule then normally exists too).
 */
export async function syncSchedule(
  deps: Pick<ExecutionDeps, 'temporal'>,
  mission: MissionDoc,
  known = false
): Promise<void> {
  const options = scheduleOptions(deps, mission);
  const create = async (): Promise<boolean> => {
    try {
      await deps.temporal.client.schedule.create(options);
      return true;
    } catch (err) {
      if (!(err instanceof ScheduleAlreadyRunning)) throw invalidSchedule(err);
      return false;
    }
  };
  if (!known && (await create())) return;
  try {
    await deps.temporal.client.schedule.getHandle(options.scheduleId).update((previous) => ({
      ...previous,
      spec: options.spec,
      action: options.action as typeof previous.action,
      state: {
        ...previous.state,
        paused: options.state?.paused ?? false,
        note: options.state?.note ?? (previous.state.paused ? 'resumed through the api' : previous.state.note),
        ...(options.state?.remainingActions !== undefined ? { remainingActions: options.state.remainingActions } : {}),
      },
    }));
  } catch (err) {
    // A stored mission whose Schedule is gone (deleted by hand): made again.
    if (known && err instanceof ScheduleNotFoundError && (await create())) return;
    throw invalidSchedule(err);
  }
}

/** A schedule Temporal refuses (INVALID_ARGUMENT) is the client's cron expression: 400 naming it. */
function invalidSchedule(err: unknown): unknown {
  const code =
    (err as { code?: number; cause?: { code?: number } }).code ?? (err as { cause?: { code?: number } }).cause?.code;
  return code === 3 ? new ValidationError(`Invalid schedule.value: ${(err as Error).message}`) : err;
}

/**
 * @param deps Temporal.
 * @param mission a mission.
 * @returns its next run times as Temporal computes them (empty for a manual or paused mission).
 */
export async function nextRunTimes(deps: Pick<ExecutionDeps, 'temporal'>, mission: MissionDoc): Promise<Date[]> {
  try {
    const info = await deps.temporal.client.schedule.getHandle(missionScheduleId(mission._id)).describe();
    return info.state.paused ? [] : info.info.nextActionTimes;
  } catch (err) {
    if (err instanceof ScheduleNotFoundError) return [];
    throw err;
  }
}

/**
 * Deletes a mission's Schedule; one already gone is fine.
 * @param deps Temporal.
 * @param missionId the mission.
 */
export async function deleteSchedule(deps: Pick<ExecutionDeps, 'temporal'>, missionId: string): Promise<void> {
  try {
    await deps.temporal.client.schedule.getHandle(missionScheduleId(missionId)).delete();
  } catch (err) {
    if (!(err instanceof ScheduleNotFoundError)) throw err;
  }
}
