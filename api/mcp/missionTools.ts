/**
 * The MCP endpoint's mission tools: the same functions as GET and POST /api/missions (commands/missions.ts), with
 * the same input schema as the route's body.
 */
import { createMission, listMissions } from '../../commands/missions';
import { nextRunTimes, parseSchedule, scheduleInput } from '../../commands/missionSchedules';
import type { Schema } from '../../lib/ajv';
import { pageQueryProperties } from '../../lib/pagination';
import { MISSION_STATUSES, type MissionStatus } from '../../models';
import { presentMission } from '../../presenters/mission';
import { missionCreateBody } from '../current/missions.schema';
import type { Validated } from '../schemas';
import type { McpTool } from './tool';

/** @returns the mission tools. */
export function missionTools(): McpTool[] {
  return [
    {
      name: 'list_missions',
      title: 'List missions',
      description: 'The organization’s missions, newest first (as GET /api/missions).',
      inputSchema: {
        type: 'object',
        additionalProperties: false,
        properties: {
          ...(pageQueryProperties as Record<string, Schema>),
          status: { type: 'string', enum: [...MISSION_STATUSES] },
        },
      },
      annotations: { readOnlyHint: true },
      call: async (args, ctx) => {
        const { items, nextCursor } = await listMissions(
          ctx.auth,
          { status: args.status as MissionStatus | undefined },
          { limit: args.limit as number, cursor: args.cursor as string | undefined }
        );
        return { missions: items.map((m) => presentMission(m, null)), next_cursor: nextCursor };
      },
    },
    {
      name: 'create_mission',
      title: 'Create a mission',
      description:
        'A goal, an agent and a schedule (cron in an IANA time zone, once, or manual) run by a Temporal Schedule; ' +
        'each run starts a job (as POST /api/missions).',
      inputSchema: missionCreateBody,
      call: async (args, ctx) => {
        const body = args as unknown as Validated<typeof missionCreateBody>;
        const schedule = scheduleInput(body.schedule);
        parseSchedule(schedule);
        const mission = await createMission(ctx.deps, ctx.auth, { ...body, schedule });
        return { mission: presentMission(mission, await nextRunTimes(ctx.deps, mission)) };
      },
    },
  ];
}
