/**
 * Missions [docs/decisions.md "Missions"]: a standing goal, an agent and a schedule. One Temporal Schedule per
 * mission (`mission-<id>`) fires workflow `missionRun`, which creates a job for the mission's goal and open tasks
 * (activities/missions.ts); commands/missionSchedules.ts keeps that Schedule in line with the mission. Mission
 * tasks are v1 tasks with `missionId` (commands/tasks.ts: one task state machine). Plain functions (auth context
 * in, records out) for the HTTP routes and the MCP tools.
 */
import { ForbiddenError, NotFoundError, ValidationError } from '../lib/errors';
import { paginate } from '../lib/pagination';
import {
  Mission,
  MISSION_STATUSES,
  type MissionDoc,
  type MissionStatus,
  type JobDoc,
  type TaskDoc,
  type TaskStatus,
} from '../models';
import { AGENT_LIBRARY, useLibraryAgent } from './agentLibrary';
import { findOrganizationAgent } from './agents';
import type { ExecutionDeps } from './executionStart';
import { createJob } from './jobs';
import { taskGoal } from './missionGoals';
import { deleteSchedule, parseSchedule, storedSchedule, syncSchedule, type ScheduleInput } from './missionSchedules';
import { recordEvent, type EventDeps } from './serviceEvents';
import { ensureDefaultSpace } from './defaultSpace';
import { findVisibleSpace } from './spaces';
import { createTask, findTask, updateTask, type TaskCreateInput, type TaskUpdateInput } from './tasks';
import type { AuthContext } from './tokens';

const NOT_FOUND = 'Mission not found';

export interface MissionCreateInput {
  title: string;
  goal: string;
  agentType: string;
  schedule?: ScheduleInput | null;
  status?: MissionStatus;
  workspaceId?: string;
}

export interface MissionUpdateInput {
  title?: string;
  goal?: string;
  schedule?: ScheduleInput | null;
  status?: MissionStatus;
}

/**
 * @param auth the caller.
 * @param agentType an agent id of the organization, or the slug of a library agent (a kind of agent: `general`,
 *   `research-assistant`, ...), installed in the organization on first use.
 * @returns the agent's id.
 * @throws ValidationError naming `agentType`: what it accepts, or that an owner or admin uninstalled that library
 *   agent.
 */
async function resolveAgent(auth: AuthContext, agentType: string): Promise<string> {
  const library = AGENT_LIBRARY.find((a) => a.slug === agentType);
  if (library) {
    const id = await useLibraryAgent(auth, library);
    if (id) return id;
    throw new ValidationError(
      `Invalid agentType: the library agent ${agentType} was uninstalled in the organization (install it again with PATCH /api/agents/{id}/install-state)`
    );
  }
  try {
    return (await findOrganizationAgent(auth, agentType))._id;
  } catch (err) {
    if (!(err instanceof NotFoundError)) throw err;
    throw new ValidationError(
      `Invalid agentType: must be an agent id of the organization or a library agent: ${AGENT_LIBRARY.map((a) => a.slug).join(', ')}`
    );
  }
}

/**
 * Creates a mission and its Schedule.
 * @param deps Temporal.
 * @param auth the caller (its runs act as this user).
 * @param input title, goal, agent, schedule, status, workspace.
 * @returns the mission.
 */
export async function createMission(
  deps: Pick<ExecutionDeps, 'temporal'>,
  auth: AuthContext,
  input: MissionCreateInput
): Promise<MissionDoc> {
  const schedule = parseSchedule(input.schedule);
  const agentId = await resolveAgent(auth, input.agentType);
  const workspaceId = input.workspaceId ?? auth.activeWorkspaceId;
  const space = workspaceId
    ? await findVisibleSpace(auth, workspaceId).catch((err: unknown) => {
        throw err instanceof NotFoundError ? new ValidationError('Invalid workspaceId: workspace not found') : err;
      })
    : await ensureDefaultSpace(auth);
  if (space.organizationId !== auth.organizationId)
    throw new ValidationError('Invalid workspaceId: workspace not found');
  const mission = (
    await Mission.create({
      organizationId: auth.organizationId,
      userId: auth.userId,
      title: input.title,
      goal: input.goal,
      agentType: input.agentType,
      agentId,
      spaceId: space._id,
      schedule,
      status: input.status ?? 'active',
    })
  ).toObject() as MissionDoc;
  try {
    await syncSchedule(deps, mission);
  } catch (err) {
    // Without its Schedule the mission would never run: it is not kept (the client retries the create).
    await Mission.deleteOne({ _id: mission._id, organizationId: auth.organizationId });
    throw err;
  }
  return mission;
}

/**
 * @param auth the caller.
 * @param id mission id.
 * @returns the mission of the caller's organization.
 */
export async function findMission(auth: AuthContext, id: string): Promise<MissionDoc> {
  const mission = await Mission.findOne({ _id: id, organizationId: auth.organizationId }).lean<MissionDoc>();
  if (!mission) throw new NotFoundError(NOT_FOUND);
  return mission;
}

/**
 * @param auth the caller.
 * @param filters status.
 * @param page limit and cursor.
 * @returns the organization's missions, newest first.
 */
export async function listMissions(
  auth: AuthContext,
  filters: { status?: MissionStatus },
  page: { limit: number; cursor?: string }
): Promise<{ items: MissionDoc[]; nextCursor: string | null }> {
  const filter: Record<string, unknown> = { organizationId: auth.organizationId };
  if (filters.status) filter.status = filters.status;
  return paginate<MissionDoc>(Mission, filter, page);
}

/**
 * Changes a mission and its Schedule (`paused` pauses it, `active` unpauses it), and records `mission.updated`.
 * @param deps Temporal.
 * @param auth the caller.
 * @param id mission id.
 * @param input the fields to change.
 * @returns the mission after the change.
 */
export async function updateMission(
  deps: Pick<ExecutionDeps, 'temporal' | 'dispatchEvent'>,
  auth: AuthContext,
  id: string,
  input: MissionUpdateInput
): Promise<MissionDoc> {
  const mission = await findMission(auth, id);
  const set: Record<string, unknown> = {};
  if (input.title !== undefined) set.title = input.title;
  if (input.goal !== undefined) set.goal = input.goal;
  if (input.schedule !== undefined) set.schedule = parseSchedule(input.schedule, storedSchedule(mission));
  if (input.status !== undefined) {
    if (!(MISSION_STATUSES as readonly string[]).includes(input.status)) throw new ValidationError('Invalid status');
    set.status = input.status;
  }
  const updated = { ...mission, ...set } as MissionDoc;
  // The Schedule first: should Temporal refuse or be away, the record keeps its old values.
  await syncSchedule(deps, updated, true);
  await Mission.updateOne({ _id: mission._id, organizationId: auth.organizationId }, { $set: set });
  const stored = await findMission(auth, id);
  if (Object.keys(set).length > 0)
    await recordEvent(
      {
        type: 'mission.updated',
        organizationId: auth.organizationId,
        data: { mission_id: stored._id, changed: Object.keys(set), status: stored.status },
      },
      deps
    );
  return stored;
}

/**
 * Deletes a mission: its Schedule first (one already gone is fine; should Temporal be away, nothing changed), then
 * the record. Its tasks and the jobs its runs made stay, still naming it. The creator and the organization's
 * owners and admins may delete one; other members get 403.
 * @param deps Temporal.
 * @param auth the caller.
 * @param id mission id.
 */
export async function deleteMission(
  deps: Pick<ExecutionDeps, 'temporal'>,
  auth: AuthContext,
  id: string
): Promise<void> {
  const mission = await findMission(auth, id);
  if (mission.userId !== auth.userId && auth.role === 'member') throw new ForbiddenError();
  await deleteSchedule(deps, mission._id);
  await Mission.deleteOne({ _id: mission._id, organizationId: auth.organizationId });
}

/**
 * @param deps the dispatcher of the task's service events.
 * @param auth the caller.
 * @param missionId the mission.
 * @param input the task's fields (v1 task fields).
 * @returns the new task, linked to the mission.
 */
export async function addMissionTask(
  deps: EventDeps,
  auth: AuthContext,
  missionId: string,
  input: TaskCreateInput
): Promise<TaskDoc> {
  const mission = await findMission(auth, missionId);
  return createTask(deps, auth, { ...input, missionId: mission._id });
}

/**
 * @param auth the caller.
 * @param missionId the mission.
 * @param taskId one of its tasks.
 * @returns the task.
 * @throws NotFoundError when the task is not the mission's.
 */
async function findMissionTask(
  auth: AuthContext,
  missionId: string,
  taskId: string
): Promise<{ mission: MissionDoc; task: TaskDoc }> {
  const mission = await findMission(auth, missionId);
  const task = await findTask(auth, taskId);
  if (task.missionId !== mission._id) throw new NotFoundError('Task not found');
  return { mission, task };
}

/**
 * Updates a mission task with the v1 task rules (TASK_TRANSITIONS).
 * @param deps the dispatcher of the task's service events.
 * @param auth the caller.
 * @param missionId the mission.
 * @param taskId one of its tasks.
 * @param changes the fields to change.
 * @returns the task after the change.
 */
export async function updateMissionTask(
  deps: EventDeps,
  auth: AuthContext,
  missionId: string,
  taskId: string,
  changes: TaskUpdateInput
): Promise<TaskDoc> {
  await findMissionTask(auth, missionId, taskId);
  return updateTask(deps, auth, taskId, changes);
}

/**
 * Starts a job for a mission task: the mission's agent works on the task (in the mission's workspace); a pending
 * task moves to in_progress.
 * @param deps configuration and Temporal.
 * @param auth the caller.
 * @param missionId the mission.
 * @param taskId one of its tasks.
 * @returns the job.
 */
export async function startTaskWork(
  deps: ExecutionDeps,
  auth: AuthContext,
  missionId: string,
  taskId: string,
  options: { concurrencyKey?: string; concurrencyLimit?: number } = {}
): Promise<JobDoc> {
  const { mission, task } = await findMissionTask(auth, missionId, taskId);
  const job = await createJob(deps, auth, {
    agentId: mission.agentId,
    workspaceId: mission.spaceId,
    title: task.title,
    goal: taskGoal(mission, task),
    missionId: mission._id,
    taskId: task._id,
    concurrencyKey: options.concurrencyKey,
    concurrencyLimit: options.concurrencyLimit,
  });
  if ((task.status as TaskStatus) === 'pending') await updateTask(deps, auth, task._id, { status: 'in_progress' });
  return job;
}
