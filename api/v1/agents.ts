/**
 * /api/v1/agents: list, create, read, update, soft delete (SPEC "v1 surface: agents").
 */
import {
  archiveAgent,
  checkAgentIds,
  checkMemberId,
  createAgent,
  findModifiableAgent,
  findVisibleAgent,
  listAgents,
  updateAgent,
} from '../../commands/agents';
import { checkMcpServerIds } from '../../commands/mcpServers';
import { checkSkillIds } from '../../commands/skills';
import { ValidationError } from '../../lib/errors';
import { presentAgent } from '../../presenters/agent';
import { route, type RouteSpec } from '../route';
import { idParams, pageQuery, successMessage } from '../schemas';
import {
  agentCreateBody,
  agentCreateResponse,
  agentListResponse,
  agentReadResponse,
  agentUpdateBody,
} from './agents.schema';

const tags = ['Agents'];

/** @returns the route declarations. */
export function agentRoutes(): RouteSpec[] {
  return [
    route({
      method: 'get',
      path: '/agents',
      summary: 'List agents of the organization (archived excluded)',
      tags,
      auth: 'v1',
      query: pageQuery(),
      responses: { 200: agentListResponse },
      handler: async (ctx, { query }) => {
        const { items, total, nextCursor } = await listAgents(ctx.state.auth, query);
        ctx.body = { success: true, agents: items.map(presentAgent), total, nextCursor };
      },
    }),
    route({
      method: 'post',
      path: '/agents',
      summary: 'Create an agent (with a first chat in the default space)',
      tags,
      auth: 'v1',
      body: agentCreateBody,
      responses: { 200: agentCreateResponse },
      handler: async (ctx, { body }) => {
        const { system_message: alias, systemPrompt, ...rest } = body;
        const prompt = systemPrompt ?? alias;
        if (!prompt) throw new ValidationError('Missing required field: systemPrompt');
        await checkSkillIds(ctx.state.auth, rest.skillIds ?? [], 'skillIds');
        await checkMcpServerIds(ctx.state.auth, rest.mcpServerIds ?? [], 'mcpServerIds');
        await checkAgentIds(ctx.state.auth, rest.subAgentIds ?? [], 'subAgentIds');
        await checkMemberId(ctx.state.auth, rest.ownerId, 'ownerId');
        const agent = await createAgent(ctx.state.auth, { ...rest, systemPrompt: prompt });
        ctx.body = {
          success: true,
          id: agent._id,
          name: agent.name,
          status: 'active',
          chatUrl: `/${agent.organizationId}/spaces/${agent.spaceId}/chats/${agent.chatId}`,
        };
      },
    }),
    route({
      method: 'get',
      path: '/agents/:id',
      summary: 'Read an agent',
      tags,
      auth: 'v1',
      params: idParams,
      responses: { 200: agentReadResponse },
      handler: async (ctx, { params }) => {
        const agent = await findVisibleAgent(ctx.state.auth, params.id);
        ctx.body = { success: true, agent: presentAgent(agent) };
      },
    }),
    route({
      method: 'patch',
      path: '/agents/:id',
      summary:
        'Update name, role, systemPrompt, visibility, skillIds, advanced_tools, mcpServerIds or subAgentIds (omitted fields unchanged)',
      tags,
      auth: 'v1',
      params: idParams,
      body: agentUpdateBody,
      responses: { 200: successMessage },
      handler: async (ctx, { params, body }) => {
        const { system_message: alias, systemPrompt, ...rest } = body;
        const prompt = systemPrompt ?? alias;
        const { id } = params;
        if (rest.skillIds || rest.mcpServerIds || rest.subAgentIds) {
          await findModifiableAgent(ctx.state.auth, id); // 404 / 403 before the skills are looked at
          if (rest.skillIds) await checkSkillIds(ctx.state.auth, rest.skillIds, 'skillIds');
          if (rest.mcpServerIds) await checkMcpServerIds(ctx.state.auth, rest.mcpServerIds, 'mcpServerIds');
          if (rest.subAgentIds) await checkAgentIds(ctx.state.auth, rest.subAgentIds, 'subAgentIds');
        }
        await updateAgent(ctx.state.auth, id, {
          ...rest,
          ...(prompt !== undefined ? { systemPrompt: prompt } : {}),
        });
        ctx.body = { success: true, message: 'Agent updated successfully' };
      },
    }),
    route({
      method: 'delete',
      path: '/agents/:id',
      summary: 'Archive an agent (soft delete; history kept; no restore)',
      tags,
      auth: 'v1',
      params: idParams,
      responses: { 200: successMessage },
      handler: async (ctx, { params }) => {
        await archiveAgent(ctx.state.auth, params.id);
        ctx.body = { success: true, message: 'Agent deleted successfully' };
      },
    }),
  ];
}
