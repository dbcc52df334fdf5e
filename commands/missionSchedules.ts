/**
 * A mission's schedule and its Temporal Schedule [docs/decisions.md "Missions"]: what clients send (cron, interval,
 * once or manual, with the policies of commands/schedulePolicies.ts) validated and normalized, translated into the Schedule `mission-<id>` that fires workflow `missionRun`,
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
import type { MissionRunInput } from '../workflows/definitions';
import { agentIdKey, organizationIdKey, workKindKey } from '../workflows/searchAttributes';
import type { ExecutionDeps } from './executionStart';
import {
  DEFAULT_POLICIES,
  DURATION_BOUNDS,
  parseDuration,
  parsePolicies,
  schedulePolicies,
  type SchedulePolicies,
  type SchedulePolicyInput,
} from './schedulePolicies';

export { DURATION_BOUNDS, parseDuration, temporalOverlap, type SchedulePolicyInput } from './schedulePolicies';

/**
 * A schedule as clients send it: cron (5 fields, IANA timezone, default UTC), interval (a duration), once (an ISO
 * time), manual (none), or no type (an update of the policies only: the times stay), with its policies.
 */
export type ScheduleInput = SchedulePolicyInput &
  (
    | { type: 'cron'; value: string; timezone?: string }
    | { type: 'interval'; value: string; timezone?: string }
    | { type: 'once'; value: string; timezone?: string }
    | { type: 'manual'; timezone?: string }
    | { type?: undefined; timezone?: string }
  );

export interface MissionSchedule extends SchedulePolicies {
  type: 'cron' | 'interval' | 'once' | 'manual';
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
  s:
    | ({ type?: 'cron' | 'interval' | 'once' | 'manual'; value?: string; timezone?: string } & SchedulePolicyInput)
    | undefined
): ScheduleInput | undefined {
  if (s === undefined) return undefined;
  const { type, value, ...rest } = s;
  if (type === undefined || type === 'manual') return { ...rest, type };
  if (value === undefined) throw new ValidationError('Missing required field: schedule.value');
  return { ...rest, type, value };
}

/** The years a `once` schedule may name (what the workflow engine's calendar specs accept). */
export const SCHEDULE_YEARS = { first: 2000, last: 2100 } as const;

/**
 * Validates and normalizes a schedule and its policies.
 * @param input what the client sent (null or undefined: manual, default policies).
 * @param current the stored schedule, on update: a field the client omits keeps its value there.
 * @returns the stored schedule.
 * @throws ValidationError naming the field (`schedule.value`, `schedule.timezone`, `schedule.overlap`, …).
 */
export function parseSchedule(
  input: ScheduleInput | null | undefined,
  current?: Partial<MissionSchedule> | null
): MissionSchedule {
  const before = { ...DEFAULT_POLICIES, ...withoutNullish(current ?? {}) };
  const policies = parsePolicies(input ?? {}, before);
  if (input?.timezone !== undefined && !isTimeZone(input.timezone))
    throw new ValidationError(`Invalid schedule.timezone: ${input.timezone} is not an IANA time zone`);
  if (input && input.type === undefined) {
    if (input.timezone !== undefined && before.type === 'cron')
      return { ...parseTimes({ type: 'cron', value: before.value!, timezone: input.timezone }), ...policies };
    return {
      type: (before.type as MissionSchedule['type'] | undefined) ?? 'manual',
      value: before.value ?? null,
      timezone: before.timezone ?? 'UTC',
      ...policies,
    };
  }
  return { ...parseTimes(input ?? { type: 'manual' }), ...policies };
}

/** @returns the object without its null and undefined fields (a record stored before a field existed). */
function withoutNullish<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== null && v !== undefined)) as Partial<T>;
}

/**
 * Validates and normalizes a schedule's times (the cron expression by croner, the time zone by Intl).
 * @param input the times.
 * @returns type, value and time zone.
 */
function parseTimes(
  input: Exclude<ScheduleInput, { type?: undefined }>
): Pick<MissionSchedule, 'type' | 'value' | 'timezone'> {
  if (input.type === 'manual') return { type: 'manual', value: null, timezone: 'UTC' };
  if (input.type === 'interval') {
    parseDuration(input.value, 'schedule.value', DURATION_BOUNDS.value);
    return { type: 'interval', value: input.value.trim(), timezone: 'UTC' };
  }
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
  const jitter = schedule.jitter
    ? parseDuration(schedule.jitter, 'schedule.jitter', DURATION_BOUNDS.jitter)
    : undefined;
  if (schedule.type === 'cron')
    return { cronExpressions: [schedule.value!], timezone: schedule.timezone, ...(jitter ? { jitter } : {}) };
  if (schedule.type === 'interval')
    return {
      intervals: [{ every: parseDuration(schedule.value!, 'schedule.value', DURATION_BOUNDS.value) }],
      ...(jitter ? { jitter } : {}),
    };
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
 * @param mission a mission.
 * @returns its schedule with every policy (a record stored before policies existed has the defaults).
 */
export function storedSchedule(mission: Pick<MissionDoc, 'schedule'>): MissionSchedule {
  const s = (mission.schedule ?? {}) as Partial<MissionSchedule>;
  return {
    type: s.type ?? 'manual',
    value: s.value ?? null,
    timezone: s.timezone ?? 'UTC',
    overlap: s.overlap ?? DEFAULT_POLICIES.overlap,
    catchupWindow: s.catchupWindow ?? null,
    pauseOnFailure: s.pauseOnFailure ?? false,
    jitter: s.jitter ?? null,
  };
}

/**
 * The Schedule of a mission, as Temporal takes it.
 * @param deps Temporal.
 * @param mission the mission.
 * @returns the schedule's options.
 */
function scheduleOptions(deps: Pick<ExecutionDeps, 'temporal'>, mission: MissionDoc): ScheduleOptions {
  const schedule = storedSchedule(mission);
  return {
    scheduleId: missionScheduleId(mission._id),
    spec: scheduleSpec(schedule),
    policies: schedulePolicies(schedule),
    action: {
      type: 'startWorkflow',
      workflowType: 'missionRun',
      workflowId: `mission-run-${mission._id}`,
      taskQueue: deps.temporal.taskQueue,
      args: [{ missionId: mission._id }] satisfies [MissionRunInput],
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
      policies: { ...previous.policies, ...options.policies } as typeof previous.policies,
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
  // Paused on the record is paused (pause-on-failure writes the record just before Temporal pauses the Schedule).
  if (mission.status === 'paused') return [];
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
