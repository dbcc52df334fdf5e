/**
 * /api/v1/mcp-servers: register, list, read, update, delete the organization's MCP server instances, and list a
 * server's tools through the MCP client with its reachability (commands/mcpServers.ts, docs/decisions.md "MCP
 * server instances").
 */
import { mcpToolName, toolAllowed } from '../../commands/agentMcpTools';
import {
  createMcpServer,
  deleteMcpServer,
  findMcpServer,
  listMcpServers,
  mcpServerTools,
  updateMcpServer,
} from '../../commands/mcpServers';
import type { Config } from '../../lib/config';
import { presentMcpServer } from '../../presenters/mcpServer';
import { route, type RouteSpec } from '../route';
import { idParams, successMessage } from '../schemas';
import {
  mcpServerCreateBody,
  mcpServerListQuery,
  mcpServerListResponse,
  mcpServerResponse,
  mcpServerToolsResponse,
  mcpServerUpdateBody,
} from './mcpServers.schema';

const tags = ['MCP servers'];

/**
 * @param deps the configuration (destination rules, MCP limits, the encryption key).
 * @returns the route declarations.
 */
export function mcpServerRoutes(deps: { config: Readonly<Config> }): RouteSpec[] {
  const { config } = deps;
  return [
    route({
      method: 'get',
      path: '/mcp-servers',
      summary: 'List the organization’s MCP server instances, newest first',
      tags,
      auth: 'v1',
      query: mcpServerListQuery,
      responses: { 200: mcpServerListResponse },
      handler: async (ctx, { query: page }) => {
        const { items, nextCursor } = await listMcpServers(ctx.state.auth, page);
        ctx.body = { success: true, mcpServers: items.map(presentMcpServer), nextCursor };
      },
    }),
    route({
      method: 'post',
      path: '/mcp-servers',
      summary: 'Register a remote MCP server (streamable HTTP); its name is unique in the organization (409)',
      tags,
      auth: 'v1',
      body: mcpServerCreateBody,
      responses: { 200: mcpServerResponse },
      errors: [409],
      handler: async (ctx, { body }) => {
        const doc = await createMcpServer(ctx.state.auth, config, body);
        ctx.body = { success: true, mcpServer: presentMcpServer(doc) };
      },
    }),
    route({
      method: 'get',
      path: '/mcp-servers/:id',
      summary: 'Read an MCP server instance (header names only, never their values)',
      tags,
      auth: 'v1',
      params: idParams,
      responses: { 200: mcpServerResponse },
      handler: async (ctx, { params }) => {
        const doc = await findMcpServer(ctx.state.auth, params.id);
        ctx.body = { success: true, mcpServer: presentMcpServer(doc) };
      },
    }),
    route({
      method: 'patch',
      path: '/mcp-servers/:id',
      summary: 'Update an MCP server instance (omitted fields unchanged; `headers` replaces them all)',
      tags,
      auth: 'v1',
      params: idParams,
      body: mcpServerUpdateBody,
      responses: { 200: mcpServerResponse },
      errors: [409],
      handler: async (ctx, { params, body: changes }) => {
        const doc = await updateMcpServer(ctx.state.auth, config, params.id, changes);
        ctx.body = { success: true, mcpServer: presentMcpServer(doc) };
      },
    }),
    route({
      method: 'delete',
      path: '/mcp-servers/:id',
      summary: 'Delete an MCP server instance; agents no longer get its tools',
      tags,
      auth: 'v1',
      params: idParams,
      responses: { 200: successMessage },
      handler: async (ctx, { params }) => {
        await deleteMcpServer(ctx.state.auth, params.id);
        ctx.body = { success: true, message: 'MCP server deleted successfully' };
      },
    }),
    route({
      method: 'get',
      path: '/mcp-servers/:id/tools',
      summary:
        'List the server’s tools through the MCP client, with its reachability (an unreachable server is 200 with ' +
        '`reachable: false` and why)',
      tags,
      auth: 'v1',
      params: idParams,
      responses: { 200: mcpServerToolsResponse },
      handler: async (ctx, { params }) => {
        const doc = await findMcpServer(ctx.state.auth, params.id);
        const listed = await mcpServerTools(config, doc);
        if (!listed.ok && listed.detail)
          ctx.state.log.warn({ mcpServer: doc._id, detail: listed.detail }, listed.message);
        ctx.body = listed.ok
          ? {
              success: true,
              reachable: true,
              tools: listed.tools.map((t) => ({
                name: t.name,
                description: t.description,
                inputSchema: t.inputSchema,
                allowed: toolAllowed(doc, t.name),
                modelToolName: mcpToolName(doc.name, t.name),
              })),
              error: null,
            }
          : { success: true, reachable: false, tools: [], error: { reason: listed.reason, message: listed.message } };
      },
    }),
  ];
}
