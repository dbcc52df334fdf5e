/**
 * The activity of the missionRun workflow: idempotent (the run's job has an id derived from the run's workflow id,
 * its `mission.run_started` event a key naming the run), so a retry creates nothing twice.
 */
import { Context } from '@temporalio/activity';
import { TypedSearchAttributes } from '@temporalio/common';
import { createJobRecord, jobWorkflowStart } from '../commands/jobs';
import { missionRunGoal, openMissionTasks } from '../commands/missionGoals';
import { recordScheduleSkips } from '../commands/missionSkips';
import { recordEvent, type EventDeps } from '../commands/serviceEvents';
import type { AuthContext } from '../commands/tokens';
import type { Config } from '../lib/config';
import { sha256Hex } from '../lib/crypto';
import type { Logger } from '../lib/logger';
import { Membership, Mission, type MissionDoc } from '../models';
import { missionRunEndedSignal, type MissionRunInput } from '../workflows/definitions';
import { missionSkipsWorkflowId } from '../workflows/ids';
import type { JobInput } from '../workflows/job';
import { organizationIdKey, workKindKey } from '../workflows/searchAttributes';

export interface MissionActivityDeps extends EventDeps {
  logger: Logger;
  config: Readonly<Config>;
}

/**
 * @param runId a mission run's workflow id.
 * @returns the id of the job the run creates.
 */
export const missionRunJobId = (runId: string): string => `job_${sha256Hex(runId).slice(0, 16)}`;

/**
 * @param deps logger and configuration.
 * @returns the mission activities.
 */
export function createMissionActivities(deps: MissionActivityDeps) {
  const log = deps.logger.child({ component: 'missions' });

  /**
   * Writes the run's job (queued) for the mission's goal and open tasks, as the mission's creator.
   * @returns the job and its workflow's input, or null when the mission is paused or gone (nothing runs).
   */
  async function prepareMissionRun(input: {
    missionId: string;
    runId: string;
  }): Promise<{ jobId: string; input: JobInput; memo: Record<string, unknown> } | null> {
    const mission = await Mission.findById(input.missionId).lean<MissionDoc>();
    if (!mission || mission.status !== 'active') {
      log.info({ missionId: input.missionId, runId: input.runId, status: mission?.status }, 'mission run skipped');
      return null;
    }
    const member = await Membership.findOne({ organizationId: mission.organizationId, userId: mission.userId }).lean();
    if (!member) {
      log.warn({ missionId: mission._id }, 'mission run skipped: its creator left the organization');
      return null;
    }
    await recordEvent(
      {
        type: 'mission.run_started',
        organizationId: mission.organizationId,
        data: { mission_id: mission._id, run_id: input.runId },
        key: `mission-run:${input.runId}`,
      },
      deps
    );
    const auth: AuthContext = {
      organizationId: mission.organizationId,
      userId: mission.userId,
      tokenId: `mission:${mission._id}`,
      kind: 'service',
      scopes: ['*'],
      role: member.role,
      activeWorkspaceId: null,
      rateLimit: null,
    };
    const tasks = await openMissionTasks(mission.organizationId, mission._id);
    const job = await createJobRecord(
      auth,
      {
        agentId: mission.agentId,
        workspaceId: mission.spaceId,
        title: mission.title,
        goal: missionRunGoal(mission, tasks),
        missionId: mission._id,
        missionRunId: input.runId,
      },
      missionRunJobId(input.runId)
    );
    await Mission.updateOne({ _id: mission._id }, { $set: { lastRunAt: new Date() } });
    const start = jobWorkflowStart(job, deps.config.executionDeadlineSeconds);
    log.info({ missionId: mission._id, runId: input.runId, jobId: job._id }, 'mission run started');
    return { jobId: job._id, input: start.args[0], memo: start.memo };
  }

  /**
   * Records the skipped and missed runs the mission's Schedule counted and no event names yet (commands/missionSkips.ts).
   * @returns how many each reason added.
   */
  async function recordMissionSkips(input: { missionId: string }): Promise<{ overlap: number; missed: number }> {
    const added = await recordScheduleSkips(Context.current().client, deps, input.missionId);
    if (added.overlap + added.missed > 0) log.info({ missionId: input.missionId, ...added }, 'mission runs skipped');
    return added;
  }

  /**
   * Asks the mission's skip check (workflow `mission-skips-<id>`) to read the Schedule's counters once this run has
   * closed: started when it is not running, signalled when it is.
   */
  async function checkMissionSkipsLater(input: { missionId: string }): Promise<void> {
    const mission = await Mission.findById(input.missionId).lean<MissionDoc>();
    if (!mission) return;
    const ctx = Context.current();
    await ctx.client.workflow.signalWithStart('missionSkips', {
      workflowId: missionSkipsWorkflowId(mission._id),
      taskQueue: ctx.info.taskQueue,
      args: [{ missionId: mission._id }] satisfies [MissionRunInput], // workflows/missionSkips.ts
      signal: missionRunEndedSignal,
      typedSearchAttributes: new TypedSearchAttributes([
        { key: organizationIdKey, value: mission.organizationId },
        { key: workKindKey, value: 'mission-run' },
      ]),
    });
  }

  /**
   * A run whose job failed: with pause-on-failure, Temporal has paused the Schedule (or will, as the run fails);
   * the record says so (`paused`) and `mission.updated` is recorded once for the run.
   * @returns whether the mission was paused.
   */
  async function pauseMissionAfterFailure(input: { missionId: string; runId: string }): Promise<boolean> {
    const mission = await Mission.findById(input.missionId).lean<MissionDoc>();
    if (!mission?.schedule?.pauseOnFailure) return false;
    if (mission.status === 'active')
      await Mission.updateOne({ _id: mission._id, status: 'active' }, { $set: { status: 'paused' } });
    await recordEvent(
      {
        type: 'mission.updated',
        organizationId: mission.organizationId,
        data: {
          mission_id: mission._id,
          changed: ['status'],
          status: 'paused',
          reason: 'run_failed',
          run_id: input.runId,
        },
        key: `mission-paused-on-failure:${input.runId}`,
      },
      deps
    );
    log.info({ missionId: mission._id, runId: input.runId }, 'mission paused: its run failed');
    return true;
  }

  return { prepareMissionRun, recordMissionSkips, checkMissionSkipsLater, pauseMissionAfterFailure };
}

export type MissionActivities = ReturnType<typeof createMissionActivities>;
