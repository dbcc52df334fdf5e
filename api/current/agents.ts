/**
 * /api/agents on the current surface: the organization's agents plus the built-in library with each library
 * agent's install state; create a private agent; update; delete the caller's own private agents; install,
 * uninstall or restore a library agent. The records are the v1 surface's agents (commands/agents.ts).
 */
import { deletePrivateAgent, listLibrary, setInstallState } from '../../commands/agentLibrary';
import { checkAgentIds, createAgent, findOrganizationAgent, listAgents, updateAgent } from '../../commands/agents';
import { checkMcpServerIds } from '../../commands/mcpServers';
import { checkSkillIds } from '../../commands/skills';
import { presentCurrentAgent, presentLibraryEntry } from '../../presenters/agent';
import { route, type RouteSpec } from '../route';
import { idParams, pageQuery } from '../schemas';
import {
  currentAgentCreateBody,
  currentAgentListResponse,
  currentAgentResponse,
  currentAgentUpdateBody,
  deletedResponse,
  installStateBody,
  libraryEntryResponse,
} from './agents.schema';

const tags = ['Agents'];

/** @returns the route declarations. */
export function currentAgentRoutes(): RouteSpec[] {
  return [
    route({
      method: 'get',
      path: '/agents',
      summary: 'List the organization’s agents (paged) and the agent library with install states',
      tags,
      auth: 'service',
      scope: 'agents:read',
      query: pageQuery(),
      responses: { 200: currentAgentListResponse },
      handler: async (ctx, { query: page }) => {
        const [{ items, total, nextCursor }, library] = await Promise.all([
          listAgents(ctx.state.auth, page),
          listLibrary(ctx.state.auth),
        ]);
        ctx.body = {
          agents: items.map(presentCurrentAgent),
          library: library.map(presentLibraryEntry),
          total,
          next_cursor: nextCursor,
        };
      },
    }),
    route({
      method: 'post',
      path: '/agents',
      summary: 'Create a private agent (visible to its creator only)',
      tags,
      auth: 'service',
      scope: 'agents:write',
      body: currentAgentCreateBody,
      responses: { 201: currentAgentResponse },
      handler: async (ctx, { body }) => {
        await checkSkillIds(ctx.state.auth, body.skill_ids ?? [], 'skill_ids');
        await checkMcpServerIds(ctx.state.auth, body.mcp_server_ids ?? [], 'mcp_server_ids');
        await checkAgentIds(ctx.state.auth, body.sub_agent_ids ?? [], 'sub_agent_ids');
        const agent = await createAgent(ctx.state.auth, {
          name: body.name,
          systemPrompt: body.system_prompt,
          role: body.role,
          model: body.model,
          initialGreeting: body.initial_greeting,
          tags: body.tags,
          skillIds: body.skill_ids,
          advanced_tools: body.advanced_tools,
          mcpServerIds: body.mcp_server_ids,
          subAgentIds: body.sub_agent_ids,
          maxConcurrentExecutions: body.max_concurrent_executions,
          visibility: 'private',
        });
        ctx.status = 201;
        ctx.body = { agent: presentCurrentAgent(agent) };
      },
    }),
    route({
      method: 'patch',
      path: '/agents/:id',
      summary: 'Update an agent (omitted fields unchanged)',
      tags,
      auth: 'service',
      scope: 'agents:write',
      params: idParams,
      body: currentAgentUpdateBody,
      responses: { 200: currentAgentResponse },
      handler: async (ctx, { params, body }) => {
        const { id } = params;
        const {
          system_prompt: systemPrompt,
          skill_ids: skillIds,
          mcp_server_ids: mcpServerIds,
          sub_agent_ids: subAgentIds,
          max_concurrent_executions: maxConcurrentExecutions,
          ...rest
        } = body;
        await findOrganizationAgent(ctx.state.auth, id);
        if (skillIds) await checkSkillIds(ctx.state.auth, skillIds, 'skill_ids');
        if (mcpServerIds) await checkMcpServerIds(ctx.state.auth, mcpServerIds, 'mcp_server_ids');
        if (subAgentIds) await checkAgentIds(ctx.state.auth, subAgentIds, 'sub_agent_ids');
        await updateAgent(ctx.state.auth, id, {
          ...rest,
          ...(systemPrompt !== undefined ? { systemPrompt } : {}),
          ...(skillIds !== undefined ? { skillIds } : {}),
          ...(mcpServerIds !== undefined ? { mcpServerIds } : {}),
          ...(subAgentIds !== undefined ? { subAgentIds } : {}),
          ...(maxConcurrentExecutions !== undefined ? { maxConcurrentExecutions } : {}),
        });
        ctx.body = { agent: presentCurrentAgent(await findOrganizationAgent(ctx.state.auth, id)) };
      },
    }),
    route({
      method: 'delete',
      path: '/agents/:id',
      summary: 'Delete one of your own private agents (a library agent is uninstalled instead: 409)',
      tags,
      auth: 'service',
      scope: 'agents:write',
      params: idParams,
      responses: { 200: deletedResponse },
      handler: async (ctx, { params }) => {
        const { id } = params;
        await deletePrivateAgent(ctx.state.auth, id);
        ctx.body = { id, deleted: true };
      },
    }),
    route({
      method: 'patch',
      path: '/agents/:id/install-state',
      summary: 'Install, uninstall or restore a library agent in the organization (owners and admins)',
      tags,
      auth: 'service',
      scope: 'agents:write',
      params: idParams,
      body: installStateBody,
      responses: { 200: libraryEntryResponse },
      handler: async (ctx, { params, body }) => {
        const entry = await setInstallState(ctx.state.auth, params.id, body.state);
        ctx.body = { agent: presentLibraryEntry(entry) };
      },
    }),
  ];
}
