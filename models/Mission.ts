/**
 * A mission: a standing goal an agent works on, with a schedule. Each run (a fire of its Temporal Schedule
 * `mission-<id>`, or a trigger) creates a job for the mission's goal and its open tasks [docs/decisions.md
 * "Missions"]. Its tasks are v1 tasks with `missionId` set (models/Task.ts).
 */
import mongoose, { type InferSchemaType } from 'mongoose';
import { newId } from '../lib/ids';

export const MISSION_STATUSES = ['active', 'paused'] as const;
export type MissionStatus = (typeof MISSION_STATUSES)[number];
/** `manual`: no schedule; the mission runs only when triggered (its Schedule has no times). */
export const SCHEDULE_TYPES = ['cron', 'interval', 'once', 'manual'] as const;
export type ScheduleType = (typeof SCHEDULE_TYPES)[number];
/**
 * What a run due while the previous one still runs does (Temporal's ScheduleOverlapPolicy). `allow_all` is the
 * default: every run starts, as before policies existed [docs/decisions.md "Schedule policies"].
 */
export const OVERLAP_POLICIES = [
  'skip',
  'buffer_one',
  'buffer_all',
  'cancel_other',
  'terminate_other',
  'allow_all',
] as const;
export type OverlapPolicy = (typeof OVERLAP_POLICIES)[number];
/** Why a run did not happen (webhook `mission.run_skipped`). */
export const SKIP_REASONS = ['overlap', 'missed_catchup_window'] as const;
export type SkipReason = (typeof SKIP_REASONS)[number];

const schema = new mongoose.Schema(
  {
    _id: { type: String, default: () => newId('msn') },
    organizationId: { type: String, required: true },
    /** Who created it: its runs act as this user. */
    userId: { type: String, required: true },
    title: { type: String, required: true },
    goal: { type: String, required: true },
    /** As given at creation: an agent id, or the slug of a library agent. */
    agentType: { type: String, required: true },
    /** The agent its jobs run. */
    agentId: { type: String, required: true },
    spaceId: { type: String, required: true },
    schedule: {
      type: { type: String, enum: SCHEDULE_TYPES, default: 'manual' },
      value: { type: String, default: null },
      timezone: { type: String, default: 'UTC' },
      overlap: { type: String, enum: OVERLAP_POLICIES, default: 'allow_all' },
      /** A duration (`30s`, `10m`, `2h`, `1d`); null: Temporal's default (one year). */
      catchupWindow: { type: String, default: null },
      pauseOnFailure: { type: Boolean, default: false },
      /** A duration; null: none. */
      jitter: { type: String, default: null },
    },
    /**
     * The Schedule's skip counters already recorded as `mission.run_skipped` events (commands/missionSkips.ts), for
     * the Schedule created at `scheduleCreatedAt` (a Schedule made again starts counting from 0).
     */
    skipsRecorded: {
      scheduleCreatedAt: { type: Date, default: null },
      overlap: { type: Number, default: 0 },
      missed: { type: Number, default: 0 },
    },
    status: { type: String, enum: MISSION_STATUSES, default: 'active' },
    lastRunAt: { type: Date, default: null },
  },
  { timestamps: true, versionKey: false }
);
// GET /api/missions (docs/query-shapes.md).
schema.index({ organizationId: 1, createdAt: -1, _id: -1 });
schema.index({ organizationId: 1, status: 1, createdAt: -1, _id: -1 });

export type MissionDoc = InferSchemaType<typeof schema> & { _id: string; createdAt: Date; updatedAt: Date };
export const Mission = mongoose.model('Mission', schema, 'missions');
