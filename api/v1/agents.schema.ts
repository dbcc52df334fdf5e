/** JSON Schemas of /api/v1/agents (requests and responses). */
import type { Schema } from '../../lib/ajv';
import { AGENT_VISIBILITIES } from '../../models/Agent';
import { nextCursor, record, requiredStr, str, strArray, timestamp } from '../schemas';
import { mcpServerIdList } from './mcpServers.schema';
import { MAX_SUB_AGENTS } from '../../commands/subAgents';
import { builtInToolList, skillIdList } from './skills.schema';

export const VISIBILITY_MESSAGE = 'Invalid visibility value. Must be: private, organization, public, or unlisted';

const visibility = { type: 'string', enum: [...AGENT_VISIBILITIES], 'x-message': VISIBILITY_MESSAGE } as const;

/** Limits: generous caps, well above the spec's recommendations (name < 50, prompt < 2000). */
export const AGENT_LIMITS = { name: 200, role: 200, systemPrompt: 100_000, model: 200 } as const;

/** An agent's `advanced_tools`: built-in tools it asks for beyond the default ones (commands/builtInTools.ts). */
export const ADVANCED_TOOLS = builtInToolList('Built-in tools the agent asks for beyond the default ones');

/** An agent's `subAgentIds` (`sub_agent_ids` on the current surface) [docs/decisions.md "Sub-agents"]. */
export const subAgentIdList = {
  type: 'array',
  maxItems: MAX_SUB_AGENTS,
  uniqueItems: true,
  items: { type: 'string', minLength: 1, maxLength: 100 },
  'x-message': 'Field {field} must not list an item twice',
  description:
    'Agents of the organization this agent may hand tasks to through its `delegate_to_agent` tool (each a live ' +
    'agent the caller can see)',
} as const;

/** An agent's limit of running executions (docs/fairness.md "Concurrency keys"). */
export const MAX_CONCURRENT_EXECUTIONS = {
  type: ['integer', 'null'],
  minimum: 1,
  maximum: 1000,
  description: 'Its executions running at once, at most; the others wait in order (status `queued`); null: no limit',
} as const;

export const agentCreateBody = {
  type: 'object',
  additionalProperties: false,
  required: ['name'],
  properties: {
    name: requiredStr(AGENT_LIMITS.name, { description: 'Display name' }),
    systemPrompt: str(AGENT_LIMITS.systemPrompt, {
      description: 'System instructions (required; `system_message` is an alias)',
    }),
    system_message: str(AGENT_LIMITS.systemPrompt, { description: 'Alias of systemPrompt' }),
    role: str(AGENT_LIMITS.role, { description: 'Role or purpose; default `Assistant`' }),
    visibility: { ...visibility, description: 'Default `organization`' },
    model: str(AGENT_LIMITS.model, { description: 'Model name; default DEFAULT_MODEL' }),
    initialGreeting: str(10_000),
    image: str(2000),
    color: str(50),
    ownerId: str(100),
    skillIds: skillIdList,
    advanced_tools: ADVANCED_TOOLS,
    mcpServerIds: mcpServerIdList,
    subAgentIds: subAgentIdList,
    tags: strArray(),
    maxConcurrentExecutions: MAX_CONCURRENT_EXECUTIONS,
  },
} as const;

export const agentUpdateBody = {
  type: 'object',
  additionalProperties: false,
  properties: {
    name: requiredStr(AGENT_LIMITS.name),
    role: str(AGENT_LIMITS.role),
    systemPrompt: requiredStr(AGENT_LIMITS.systemPrompt),
    system_message: requiredStr(AGENT_LIMITS.systemPrompt),
    visibility,
    skillIds: skillIdList,
    advanced_tools: ADVANCED_TOOLS,
    mcpServerIds: mcpServerIdList,
    subAgentIds: subAgentIdList,
    maxConcurrentExecutions: MAX_CONCURRENT_EXECUTIONS,
  },
} as const;

export const agentSchema: Schema = record(
  {
    id: { type: 'string' },
    name: { type: 'string' },
    role: { type: 'string' },
    systemPrompt: { type: 'string' },
    visibility: { type: 'string', enum: [...AGENT_VISIBILITIES] },
    organizationId: { type: 'string' },
    userId: { type: 'string' },
    ownerId: { type: 'string' },
    model: { type: 'string' },
    initialGreeting: { type: 'string' },
    image: { type: 'string' },
    color: { type: 'string' },
    skillIds: strArray(),
    advanced_tools: strArray(),
    mcpServerIds: strArray(),
    subAgentIds: strArray(),
    maxConcurrentExecutions: { type: ['integer', 'null'] },
    tags: strArray(),
    spaceId: { type: 'string' },
    chatId: { type: 'string' },
    archived: { type: 'boolean' },
    createdAt: timestamp,
    updatedAt: timestamp,
  },
  ['model', 'initialGreeting', 'image', 'color']
);

export const agentListResponse: Schema = record({
  success: { type: 'boolean' },
  agents: { type: 'array', items: agentSchema },
  total: { type: 'integer' },
  nextCursor,
});

export const agentCreateResponse: Schema = record({
  success: { type: 'boolean' },
  id: { type: 'string' },
  name: { type: 'string' },
  status: { type: 'string', enum: ['active'] },
  chatUrl: { type: 'string', pattern: '^/[^/]+/spaces/[^/]+/chats/[^/]+$' },
});

export const agentReadResponse: Schema = record({ success: { type: 'boolean' }, agent: agentSchema });
