/**
 * /api/missions: standing goals with a schedule (commands/missions.ts): one Temporal Schedule per mission fires
 * workflow `missionRun`, which creates a job; mission tasks (v1 tasks) and starting a job from one.
 */
import {
  addMissionTask,
  createMission,
  findMission,
  listMissions,
  startTaskWork,
  updateMission,
  updateMissionTask,
} from '../../commands/missions';
import { backfillMission } from '../../commands/missionBackfill';
import { nextRunTimes, parseSchedule, scheduleInput } from '../../commands/missionSchedules';
import { presentJob } from '../../presenters/job';
import { presentBackfill, presentMission } from '../../presenters/mission';
import { presentTask } from '../../presenters/task';
import { route, type RouteSpec } from '../route';
import { idParams } from '../schemas';
import type { ExecutionRouteDeps } from '../deps';
import {
  missionBackfillBody,
  missionBackfillResponse,
  missionCreateBody,
  missionListQuery,
  missionListResponse,
  missionResponse,
  missionTaskCreateBody,
  missionTaskParams,
  missionTaskResponse,
  missionTaskUpdateBody,
  missionUpdateBody,
  startWorkBody,
  startWorkResponse,
} from './missions.schema';

const tags = ['Missions'];

/**
 * @param deps app dependencies.
 * @returns the route declarations.
 */
export function missionRoutes(deps: ExecutionRouteDeps): RouteSpec[] {
  return [
    route({
      method: 'get',
      path: '/missions',
      summary: 'List the organization’s missions, newest first (filter: status)',
      tags,
      auth: 'service',
      scope: 'missions:read',
      query: missionListQuery,
      responses: { 200: missionListResponse },
      handler: async (ctx, { query: q }) => {
        const { items, nextCursor } = await listMissions(ctx.state.auth, { status: q.status }, q);
        ctx.body = { missions: items.map((m) => presentMission(m, null)), next_cursor: nextCursor };
      },
    }),
    route({
      method: 'post',
      path: '/missions',
      summary:
        'Create a mission: a goal, an agent and a schedule (cron, interval, once, or manual) with its policies on a Temporal Schedule',
      tags,
      auth: 'service',
      scope: 'missions:write',
      body: missionCreateBody,
      responses: { 201: missionResponse },
      handler: async (ctx, { body }) => {
        const schedule = scheduleInput(body.schedule);
        parseSchedule(schedule); // 400 before anything is written
        const mission = await createMission(deps, ctx.state.auth, { ...body, schedule });
        ctx.status = 201;
        ctx.body = { mission: presentMission(mission, await nextRunTimes(deps, mission)) };
      },
    }),
    route({
      method: 'get',
      path: '/missions/:id',
      summary: 'A mission, with its next run times from its Temporal Schedule',
      tags,
      auth: 'service',
      scope: 'missions:read',
      params: idParams,
      responses: { 200: missionResponse },
      handler: async (ctx, { params }) => {
        const mission = await findMission(ctx.state.auth, params.id);
        ctx.body = { mission: presentMission(mission, await nextRunTimes(deps, mission)) };
      },
    }),
    route({
      method: 'patch',
      path: '/missions/:id',
      summary:
        'Update a mission: title, goal, schedule and its policies, status (`paused` pauses its Schedule, `active` resumes it)',
      tags,
      auth: 'service',
      scope: 'missions:write',
      params: idParams,
      body: missionUpdateBody,
      responses: { 200: missionResponse },
      handler: async (ctx, { params, body }) => {
        const mission = await updateMission(deps, ctx.state.auth, params.id, {
          ...body,
          schedule: scheduleInput(body.schedule),
        });
        ctx.body = { mission: presentMission(mission, await nextRunTimes(deps, mission)) };
      },
    }),
    route({
      method: 'post',
      path: '/missions/:id/backfill',
      summary:
        'Run a mission for the times of its schedule in a past range (its Temporal Schedule’s backfill; at most 100 runs)',
      tags,
      auth: 'service',
      scope: 'missions:write',
      params: idParams,
      body: missionBackfillBody,
      responses: { 202: missionBackfillResponse },
      errors: [409],
      handler: async (ctx, { params, body }) => {
        const done = await backfillMission(deps, ctx.state.auth, params.id, body);
        ctx.status = 202;
        ctx.body = presentBackfill(done);
      },
    }),
    route({
      method: 'post',
      path: '/missions/:id/tasks',
      summary: 'Add a task to a mission (a task like the v1 tasks, linked to the mission)',
      tags,
      auth: 'service',
      scope: 'missions:write',
      params: idParams,
      body: missionTaskCreateBody,
      responses: { 201: missionTaskResponse },
      handler: async (ctx, { params, body }) => {
        const task = await addMissionTask(deps, ctx.state.auth, params.id, body);
        ctx.status = 201;
        ctx.body = { task: presentTask(task) };
      },
    }),
    route({
      method: 'patch',
      path: '/missions/:id/tasks/:taskId',
      summary: 'Update a mission task (status moves follow the v1 task state machine)',
      tags,
      auth: 'service',
      scope: 'missions:write',
      params: missionTaskParams,
      body: missionTaskUpdateBody,
      responses: { 200: missionTaskResponse },
      errors: [409],
      handler: async (ctx, { params, body }) => {
        const { id, taskId } = params;
        const task = await updateMissionTask(deps, ctx.state.auth, id, taskId, body);
        ctx.body = { task: presentTask(task) };
      },
    }),
    route({
      method: 'post',
      path: '/missions/:id/tasks/:taskId/start-work',
      summary: 'Start a job for a mission task (linked to the mission and the task); a pending task moves on',
      tags,
      auth: 'service',
      scope: 'missions:write',
      params: missionTaskParams,
      body: startWorkBody,
      // Optional: start-work took no body before its concurrency key.
      bodyOptional: true,
      responses: { 201: startWorkResponse },
      handler: async (ctx, { params, body }) => {
        const { id, taskId } = params;
        const job = await startTaskWork(deps, ctx.state.auth, id, taskId, {
          concurrencyKey: body.concurrency_key,
          concurrencyLimit: body.concurrency_limit,
        });
        ctx.status = 201;
        ctx.body = { jobId: job._id, job: presentJob(job) };
      },
    }),
  ];
}
