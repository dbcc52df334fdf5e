/** JSON Schemas of the current surface's /api/agents (requests and responses; snake_case fields). */
import type { Schema } from '../../lib/ajv';
import { AGENT_INSTALL_STATES, AGENT_VISIBILITIES } from '../../models/Agent';
import { nextCursor, oneOfStrings, record, requiredStr, str, strArray, timestamp } from '../schemas';
import {
  ADVANCED_TOOLS,
  AGENT_LIMITS,
  MAX_CONCURRENT_EXECUTIONS,
  subAgentIdList,
  VISIBILITY_MESSAGE,
} from '../v1/agents.schema';
import { mcpServerIdList } from '../v1/mcpServers.schema';
import { skillIdList } from '../v1/skills.schema';

const nullableString = { type: ['string', 'null'] } as const;

export const currentAgentCreateBody = {
  type: 'object',
  additionalProperties: false,
  required: ['name', 'system_prompt'],
  properties: {
    name: requiredStr(AGENT_LIMITS.name, { description: 'Display name' }),
    system_prompt: requiredStr(AGENT_LIMITS.systemPrompt, { description: 'System instructions' }),
    role: str(AGENT_LIMITS.role, { description: 'Role or purpose; default `Assistant`' }),
    model: str(AGENT_LIMITS.model, { description: 'Model name; default DEFAULT_MODEL' }),
    initial_greeting: str(10_000),
    tags: strArray(),
    skill_ids: skillIdList,
    advanced_tools: ADVANCED_TOOLS,
    mcp_server_ids: mcpServerIdList,
    sub_agent_ids: subAgentIdList,
    max_concurrent_executions: MAX_CONCURRENT_EXECUTIONS,
  },
} as const;

export const currentAgentUpdateBody = {
  type: 'object',
  additionalProperties: false,
  properties: {
    name: requiredStr(AGENT_LIMITS.name),
    role: str(AGENT_LIMITS.role),
    system_prompt: requiredStr(AGENT_LIMITS.systemPrompt),
    model: str(AGENT_LIMITS.model),
    visibility: { type: 'string', enum: [...AGENT_VISIBILITIES], 'x-message': VISIBILITY_MESSAGE },
    skill_ids: skillIdList,
    advanced_tools: ADVANCED_TOOLS,
    mcp_server_ids: mcpServerIdList,
    sub_agent_ids: subAgentIdList,
    max_concurrent_executions: MAX_CONCURRENT_EXECUTIONS,
  },
} as const;

export const INSTALL_STATE_CHANGES = [...AGENT_INSTALL_STATES, 'restore'] as const;

export const installStateBody = {
  type: 'object',
  additionalProperties: false,
  required: ['state'],
  properties: {
    state: oneOfStrings(INSTALL_STATE_CHANGES, 'state', {
      description: '`installed`, `uninstalled`, or `restore` (installed again with the library’s own fields)',
    }),
  },
} as const;

export const currentAgentSchema: Schema = record({
  id: { type: 'string' },
  name: { type: 'string' },
  role: { type: 'string' },
  system_prompt: { type: 'string' },
  model: nullableString,
  visibility: { type: 'string', enum: [...AGENT_VISIBILITIES] },
  source: { type: 'string', enum: ['organization', 'library'] },
  library_id: nullableString,
  organization_id: { type: 'string' },
  created_by: { type: 'string' },
  owner_id: { type: 'string' },
  workspace_id: { type: 'string' },
  chat_id: { type: 'string' },
  skill_ids: { type: 'array', items: { type: 'string' }, description: 'Skills (v1 /api/v1/skills), in order' },
  advanced_tools: { type: 'array', items: { type: 'string' } },
  mcp_server_ids: { type: 'array', items: { type: 'string' }, description: 'MCP servers (v1 /api/v1/mcp-servers)' },
  sub_agent_ids: { type: 'array', items: { type: 'string' }, description: 'Agents it may delegate tasks to' },
  max_concurrent_executions: {
    type: ['integer', 'null'],
    description: 'Its executions running at once, at most (null: no limit)',
  },
  created_at: timestamp,
  updated_at: timestamp,
});

export const libraryEntrySchema: Schema = record({
  id: { type: 'string', description: 'The library agent’s id in the caller’s organization' },
  library_id: { type: 'string' },
  name: { type: 'string' },
  role: { type: 'string' },
  description: { type: 'string' },
  install_state: { type: 'string', enum: [...AGENT_INSTALL_STATES] },
});

export const currentAgentListResponse: Schema = record({
  agents: { type: 'array', items: currentAgentSchema },
  library: { type: 'array', items: libraryEntrySchema },
  total: { type: 'integer' },
  next_cursor: nextCursor,
});

export const currentAgentResponse: Schema = record({ agent: currentAgentSchema });
export const libraryEntryResponse: Schema = record({ agent: libraryEntrySchema });
export const deletedResponse: Schema = record({ id: { type: 'string' }, deleted: { type: 'boolean' } });
