/** Mission → the current surface's JSON, with the field names the spec gives its Mission record (camelCase). */
import type { MissionDoc } from '../models';
import { iso } from './time';

/**
 * @param mission the stored mission.
 * @param nextRunTimes its next run times from Temporal (null where not read: lists).
 * @returns the public record.
 */
export function presentMission(mission: MissionDoc, nextRunTimes: Date[] | null): Record<string, unknown> {
  const schedule = mission.schedule;
  const policies = {
    overlap: schedule?.overlap ?? 'allow_all',
    catchupWindow: schedule?.catchupWindow ?? null,
    pauseOnFailure: schedule?.pauseOnFailure ?? false,
    jitter: schedule?.jitter ?? null,
  };
  return {
    id: mission._id,
    organizationId: mission.organizationId,
    userId: mission.userId,
    title: mission.title,
    goal: mission.goal,
    agentType: mission.agentType,
    agentId: mission.agentId,
    workspaceId: mission.spaceId,
    schedule:
      !schedule || schedule.type === 'manual'
        ? { type: 'manual', value: null, timezone: 'UTC', ...policies }
        : { type: schedule.type, value: schedule.value, timezone: schedule.timezone ?? 'UTC', ...policies },
    status: mission.status,
    lastRunAt: iso(mission.lastRunAt),
    nextRunTimes: nextRunTimes ? nextRunTimes.map((d) => d.toISOString()) : null,
    createdAt: iso(mission.createdAt),
    updatedAt: iso(mission.updatedAt),
  };
}

/**
 * @param done a backfill the mission's Schedule took.
 * @returns its answer.
 */
export function presentBackfill(done: {
  missionId: string;
  start: Date;
  end: Date;
  overlap: string;
  runs: number;
}): Record<string, unknown> {
  return {
    missionId: done.missionId,
    start: done.start.toISOString(),
    end: done.end.toISOString(),
    overlap: done.overlap,
    runs: done.runs,
  };
}
