/**
 * The MCP endpoint's mission tools: the same functions as GET and POST /api/missions (commands/missions.ts), with
 * the same input schema as the route's body.
 */
import { createMission, listMissions } from '../../commands/missions';
import { nextRunTimes, parseSchedule, scheduleInput } from '../../commands/missionSchedules';
import { MISSION_STATUSES } from '../../models';
import { presentMission } from '../../presenters/mission';
import { missionCreateBody } from '../current/missions.schema';
import { pageQuery } from '../schemas';
import { tool, type McpTool } from './tool';

/** @returns the mission tools. */
export function missionTools(): McpTool[] {
  return [
    tool({
      name: 'list_missions',

      scope: 'missions:read',
      title: 'List missions',
      description: 'The organization’s missions, newest first (as GET /api/missions).',
      inputSchema: pageQuery({ status: { type: 'string', enum: [...MISSION_STATUSES] } }),
      annotations: { readOnlyHint: true },
      call: async (args, ctx) => {
        const { items, nextCursor } = await listMissions(
          ctx.auth,
          { status: args.status },
          { limit: args.limit, cursor: args.cursor }
        );
        return { missions: items.map((m) => presentMission(m, null)), next_cursor: nextCursor };
      },
    }),
    tool({
      name: 'create_mission',

      scope: 'missions:write',
      title: 'Create a mission',
      description:
        'A goal, an agent and a schedule (cron in an IANA time zone, once, or manual) run by a Temporal Schedule; ' +
        'each run starts a job (as POST /api/missions).',
      inputSchema: missionCreateBody,
      call: async (body, ctx) => {
        const schedule = scheduleInput(body.schedule);
        parseSchedule(schedule);
        const mission = await createMission(ctx.deps, ctx.auth, { ...body, schedule });
        return { mission: presentMission(mission, await nextRunTimes(ctx.deps, mission)) };
      },
    }),
  ];
}
