/**
 * JSON Schemas of /api/v1/mcp-servers (requests and responses), and the field agents attach MCP servers with
 * (`mcpServerIds` on v1, `mcp_server_ids` on the current surface) [docs/decisions.md "MCP server instances"].
 */
import type { Schema } from '../../lib/ajv';
import { httpUrl, idList, kebabName, nextCursor, pageQuery, record, requiredStr, str, timestamp } from '../schemas';

/** Caps of an MCP server's fields. */
export const MCP_SERVER_LIMITS = {
  name: 64,
  description: 1000,
  url: 2000,
  headers: 20,
  headerValue: 8000,
  allowedTools: 200,
  toolName: 128,
} as const;
/** MCP servers one agent may have. */
export const MAX_AGENT_MCP_SERVERS = 20;

/** An agent's MCP servers: ids of the organization's MCP server instances. */
export const mcpServerIdList = idList(
  MAX_AGENT_MCP_SERVERS,
  'MCP server instances (ids, /api/v1/mcp-servers) whose tools the agent may call, besides those its skills ' +
    'require; each must be one of the organization'
);

const headers = {
  type: ['object', 'null'],
  maxProperties: MCP_SERVER_LIMITS.headers,
  propertyNames: {
    type: 'string',
    pattern: "^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,100}$",
    'x-message': 'Invalid headers: {field} is not a header name',
  },
  additionalProperties: {
    type: 'string',
    maxLength: MCP_SERVER_LIMITS.headerValue,
    pattern: '^[^\\r\\n\\u0000]*$',
    'x-message': 'Invalid {field}: a header value is one line of at most 8000 characters',
  },
  description:
    'Headers sent with every request to the server (e.g. `Authorization`); sealed at rest and never returned (the ' +
    'record shows their names). On update they replace the stored ones; null or `{}` removes them',
} as const;

const allowedTools = {
  type: ['array', 'null'],
  maxItems: MCP_SERVER_LIMITS.allowedTools,
  uniqueItems: true,
  items: { type: 'string', minLength: 1, maxLength: MCP_SERVER_LIMITS.toolName },
  'x-message': 'Field {field} must list distinct tool names',
  description: 'The server’s tools agents may call (null or absent: all of them)',
} as const;

const properties = {
  name: kebabName(MCP_SERVER_LIMITS.name, 'an MCP server name', {
    description: 'Unique in the organization, kebab-case; skills’ `requiredMCPs` refer to it',
  }),
  description: str(MCP_SERVER_LIMITS.description),
  url: {
    ...httpUrl(MCP_SERVER_LIMITS.url),
    description: 'The server’s streamable-HTTP endpoint: https, a public address (the webhooks’ destination rules)',
  },
  headers,
  allowedTools,
} as const;

export const mcpServerCreateBody = {
  type: 'object',
  additionalProperties: false,
  required: ['name', 'url'],
  properties,
} as const;

export const mcpServerUpdateBody = {
  type: 'object',
  additionalProperties: false,
  properties: { ...properties, name: { ...properties.name, minLength: 1 }, url: properties.url },
} as const;

export const mcpServerSchema: Schema = record({
  id: { type: 'string' },
  name: { type: 'string' },
  description: { type: 'string' },
  url: { type: 'string' },
  headerNames: {
    type: 'array',
    items: { type: 'string' },
    description: 'Names of the stored headers (their values are never returned)',
  },
  allowedTools: { type: ['array', 'null'], items: { type: 'string' } },
  organizationId: { type: 'string' },
  createdBy: { type: 'string' },
  createdAt: timestamp,
  updatedAt: timestamp,
});

export const mcpServerResponse: Schema = record({ success: { type: 'boolean' }, mcpServer: mcpServerSchema });
export const mcpServerListQuery = pageQuery();
export const mcpServerListResponse: Schema = record({
  success: { type: 'boolean' },
  mcpServers: { type: 'array', items: mcpServerSchema },
  nextCursor,
});

export const mcpServerToolsResponse: Schema = record({
  success: { type: 'boolean' },
  reachable: { type: 'boolean', description: 'Whether the server answered the tool listing' },
  tools: {
    type: 'array',
    description: 'The server’s tools (empty when unreachable)',
    items: record({
      name: { type: 'string' },
      description: { type: 'string' },
      inputSchema: { type: 'object' },
      allowed: { type: 'boolean', description: 'Agents may call it (the allow-list)' },
      modelToolName: { type: 'string', description: 'The name the model is offered it under' },
    }),
  },
  error: {
    oneOf: [
      { type: 'null' },
      record({
        reason: { type: 'string', enum: ['unsafe_destination', 'unreachable', 'timeout', 'too_large', 'protocol'] },
        message: requiredStr(2000),
      }),
    ],
  },
});
