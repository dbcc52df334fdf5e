/**
 * /api/v1/skills: create, list, read, update (each change a new version), delete; every version readable
 * (commands/skills.ts, docs/decisions.md "Skills").
 */
import {
  createSkill,
  deleteSkill,
  findSkillVersion,
  findVisibleSkill,
  listSkills,
  listSkillVersions,
  updateSkill,
} from '../../commands/skills';
import { presentSkill, presentSkillVersion } from '../../presenters/skill';
import { route, type RouteSpec } from '../route';
import { idParams, pageQuery, successMessage } from '../schemas';
import {
  skillCreateBody,
  skillListQuery,
  skillListResponse,
  skillResponse,
  skillUpdateBody,
  skillVersionListResponse,
  skillVersionParams,
  skillVersionResponse,
} from './skills.schema';

const tags = ['Skills'];

/** @returns the route declarations. */
export function skillRoutes(): RouteSpec[] {
  return [
    route({
      method: 'get',
      path: '/skills',
      summary: 'List the organization’s skills, newest first (filter: category)',
      tags,
      auth: 'v1',
      query: skillListQuery,
      responses: { 200: skillListResponse },
      handler: async (ctx, { query }) => {
        const { items, total, nextCursor } = await listSkills(ctx.state.auth, { category: query.category }, query);
        ctx.body = { success: true, skills: items.map(presentSkill), total, nextCursor };
      },
    }),
    route({
      method: 'post',
      path: '/skills',
      summary: 'Create a skill (version 1); its name is unique in the organization (409 when taken)',
      tags,
      auth: 'v1',
      body: skillCreateBody,
      responses: { 200: skillResponse },
      errors: [409],
      handler: async (ctx, { body }) => {
        const skill = await createSkill(ctx.state.auth, body);
        ctx.body = { success: true, skill: presentSkill(skill) };
      },
    }),
    route({
      method: 'get',
      path: '/skills/:id',
      summary: 'Read a skill (its latest version)',
      tags,
      auth: 'v1',
      params: idParams,
      responses: { 200: skillResponse },
      handler: async (ctx, { params }) => {
        ctx.body = { success: true, skill: presentSkill(await findVisibleSkill(ctx.state.auth, params.id)) };
      },
    }),
    route({
      method: 'patch',
      path: '/skills/:id',
      summary: 'Update a skill (omitted fields unchanged); a change makes a new version',
      tags,
      auth: 'v1',
      params: idParams,
      body: skillUpdateBody,
      responses: { 200: skillResponse },
      errors: [409],
      handler: async (ctx, { params, body }) => {
        const skill = await updateSkill(ctx.state.auth, params.id, body);
        ctx.body = { success: true, skill: presentSkill(skill) };
      },
    }),
    route({
      method: 'delete',
      path: '/skills/:id',
      summary: 'Delete a skill: its routes answer 404, its name is free, agents no longer have it',
      tags,
      auth: 'v1',
      params: idParams,
      responses: { 200: successMessage },
      handler: async (ctx, { params }) => {
        await deleteSkill(ctx.state.auth, params.id);
        ctx.body = { success: true, message: 'Skill deleted successfully' };
      },
    }),
    route({
      method: 'get',
      path: '/skills/:id/versions',
      summary: 'A skill’s versions, newest first (immutable snapshots)',
      tags,
      auth: 'v1',
      params: idParams,
      query: pageQuery(),
      responses: { 200: skillVersionListResponse },
      handler: async (ctx, { params, query }) => {
        const { items, nextCursor } = await listSkillVersions(ctx.state.auth, params.id, query);
        ctx.body = { success: true, versions: items.map(presentSkillVersion), nextCursor };
      },
    }),
    route({
      method: 'get',
      path: '/skills/:id/versions/:version',
      summary: 'One version of a skill, as it was made',
      tags,
      auth: 'v1',
      params: skillVersionParams,
      responses: { 200: skillVersionResponse },
      handler: async (ctx, { params }) => {
        const { id, version } = params;
        ctx.body = { success: true, version: presentSkillVersion(await findSkillVersion(ctx.state.auth, id, version)) };
      },
    }),
  ];
}
