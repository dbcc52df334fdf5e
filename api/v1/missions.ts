/**
 * /api/v1/missions: the current surface's missions (commands/missions.ts: one record, one Temporal Schedule per
 * mission) in the v1 envelopes and errors: list, create, read (with next run times), update, delete.
 */
import { createMission, deleteMission, findMission, listMissions, updateMission } from '../../commands/missions';
import { backfillMission } from '../../commands/missionBackfill';
import { nextRunTimes, parseSchedule, scheduleInput } from '../../commands/missionSchedules';
import { presentBackfill, presentMission } from '../../presenters/mission';
import { route, type RouteSpec } from '../route';
import { idParams, successMessage } from '../schemas';
import type { ExecutionRouteDeps } from '../deps';
import {
  missionBackfillBody,
  missionCreateBody,
  missionListQuery,
  missionUpdateBody,
  v1MissionBackfillResponse,
  v1MissionListResponse,
  v1MissionResponse,
} from './missions.schema';

const tags = ['Missions'];

/**
 * @param deps app dependencies (Temporal: each mission's Schedule).
 * @returns the route declarations.
 */
export function v1MissionRoutes(deps: ExecutionRouteDeps): RouteSpec[] {
  return [
    route({
      method: 'get',
      path: '/missions',
      summary: 'List the organization’s missions, newest first (filter: status)',
      tags,
      auth: 'v1',
      query: missionListQuery,
      responses: { 200: v1MissionListResponse },
      handler: async (ctx, { query: q }) => {
        const { items, nextCursor } = await listMissions(ctx.state.auth, { status: q.status }, q);
        ctx.body = { success: true, missions: items.map((m) => presentMission(m, null)), nextCursor };
      },
    }),
    route({
      method: 'post',
      path: '/missions',
      summary:
        'Create a mission: a goal, an agent and a schedule (cron, interval, once, or manual) with its policies on a Temporal Schedule',
      tags,
      auth: 'v1',
      body: missionCreateBody,
      responses: { 200: v1MissionResponse },
      handler: async (ctx, { body }) => {
        const schedule = scheduleInput(body.schedule);
        parseSchedule(schedule); // 400 before anything is written
        const mission = await createMission(deps, ctx.state.auth, { ...body, schedule });
        ctx.body = { success: true, mission: presentMission(mission, await nextRunTimes(deps, mission)) };
      },
    }),
    route({
      method: 'get',
      path: '/missions/:id',
      summary: 'A mission, with its next run times from its Temporal Schedule',
      tags,
      auth: 'v1',
      params: idParams,
      responses: { 200: v1MissionResponse },
      handler: async (ctx, { params }) => {
        const mission = await findMission(ctx.state.auth, params.id);
        ctx.body = { success: true, mission: presentMission(mission, await nextRunTimes(deps, mission)) };
      },
    }),
    route({
      method: 'patch',
      path: '/missions/:id',
      summary:
        'Update a mission: title, goal, schedule and its policies, status (`paused` pauses its Schedule, `active` resumes it)',
      tags,
      auth: 'v1',
      params: idParams,
      body: missionUpdateBody,
      responses: { 200: v1MissionResponse },
      handler: async (ctx, { params, body }) => {
        const mission = await updateMission(deps, ctx.state.auth, params.id, {
          ...body,
          schedule: scheduleInput(body.schedule),
        });
        ctx.body = { success: true, mission: presentMission(mission, await nextRunTimes(deps, mission)) };
      },
    }),
    route({
      method: 'post',
      path: '/missions/:id/backfill',
      summary:
        'Run a mission for the times of its schedule in a past range (its Temporal Schedule’s backfill; at most 100 runs)',
      tags,
      auth: 'v1',
      params: idParams,
      body: missionBackfillBody,
      responses: { 200: v1MissionBackfillResponse },
      errors: [409],
      handler: async (ctx, { params, body }) => {
        const done = await backfillMission(deps, ctx.state.auth, params.id, body);
        ctx.body = { success: true, backfill: presentBackfill(done) };
      },
    }),
    route({
      method: 'delete',
      path: '/missions/:id',
      summary: 'Delete a mission and its Schedule (its tasks and jobs stay)',
      tags,
      auth: 'v1',
      params: idParams,
      responses: { 200: successMessage },
      handler: async (ctx, { params }) => {
        await deleteMission(deps, ctx.state.auth, params.id);
        ctx.body = { success: true, message: 'Mission deleted successfully' };
      },
    }),
  ];
}
