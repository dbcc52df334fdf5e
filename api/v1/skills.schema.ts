/**
 * JSON Schemas of /api/v1/skills (requests and responses), and the fields agents attach skills and built-in tools
 * with (`skillIds`, `advanced_tools`; both surfaces' agent bodies use them).
 */
import { BUILT_IN_TOOL_NAMES } from '../../commands/builtInTools';
import type { Schema } from '../../lib/ajv';
import { SKILL_CATEGORIES, SKILL_VISIBILITIES } from '../../models/Skill';
import {
  distinctList,
  idList,
  kebabName,
  nextCursor,
  pageQuery,
  record,
  requiredStr,
  str,
  timestamp,
} from '../schemas';

/** Caps of a skill's fields [docs/decisions.md "Skills"]. */
export const SKILL_LIMITS = {
  name: 64,
  displayName: 200,
  description: 1000,
  /** Characters of a skill's Markdown prompt. */
  prompt: 20_000,
  /** MCP server names a skill may require. */
  requiredMCPs: 20,
} as const;
/** Skills one agent may have. */
export const MAX_AGENT_SKILLS = 20;

export const CATEGORY_MESSAGE = `Invalid category. Must be: ${SKILL_CATEGORIES.join(', ')}`;
export const SKILL_VISIBILITY_MESSAGE = 'Invalid visibility value. Must be: private, organization, or public';

/** Names of built-in tools (a skill's `builtInTools`, an agent's `advanced_tools`): the catalogue's names only. */
export const builtInToolList = (description: string) =>
  distinctList(
    {
      type: 'string',
      enum: [...BUILT_IN_TOOL_NAMES],
      'x-message': `Invalid {field}: not a built-in tool (known: ${BUILT_IN_TOOL_NAMES.join(', ')})`,
    } as const,
    BUILT_IN_TOOL_NAMES.length,
    description
  );

/** An agent's skills: ids of live skills of its organization, in the order their prompts follow its own. */
export const skillIdList = idList(
  MAX_AGENT_SKILLS,
  'Skills of the agent (ids), in the order their prompts follow the system prompt; each must be a skill of the ' +
    'organization the caller can see'
);

const category = { type: 'string', enum: [...SKILL_CATEGORIES], 'x-message': CATEGORY_MESSAGE } as const;
const visibility = {
  type: 'string',
  enum: [...SKILL_VISIBILITIES],
  'x-message': SKILL_VISIBILITY_MESSAGE,
} as const;

const contentProperties = {
  name: kebabName(SKILL_LIMITS.name, 'a skill name', { description: 'Unique in the organization, kebab-case' }),
  displayName: requiredStr(SKILL_LIMITS.displayName, { description: 'Default: the name' }),
  description: str(SKILL_LIMITS.description, { description: 'What the skill is for (the model reads it too)' }),
  prompt: requiredStr(SKILL_LIMITS.prompt, {
    description: 'Markdown instructions; at execution they follow the agent’s system prompt',
  }),
  category: { ...category, description: 'Default `other`' },
  builtInTools: builtInToolList('Built-in tools the skill needs; they are offered to agents that have it'),
  requiredMCPs: distinctList(
    kebabName(SKILL_LIMITS.name, 'an MCP server name'),
    SKILL_LIMITS.requiredMCPs,
    'Names of the organization’s MCP server instances the skill needs'
  ),
  visibility: { ...visibility, description: 'Default `organization`' },
} as const;

export const skillCreateBody = {
  type: 'object',
  additionalProperties: false,
  required: ['name', 'prompt'],
  properties: contentProperties,
} as const;

export const skillUpdateBody = {
  type: 'object',
  additionalProperties: false,
  properties: contentProperties,
} as const;

export const skillListQuery = pageQuery({ category });

export const skillVersionParams = {
  type: 'object',
  required: ['id', 'version'],
  properties: {
    id: { type: 'string', minLength: 1, maxLength: 100 },
    version: { type: 'integer', minimum: 1, maximum: 1_000_000_000 },
  },
} as const;

const content: Record<string, Schema> = {
  name: { type: 'string' },
  displayName: { type: 'string' },
  description: { type: 'string' },
  prompt: { type: 'string' },
  category: { type: 'string', enum: [...SKILL_CATEGORIES] },
  builtInTools: { type: 'array', items: { type: 'string' } },
  requiredMCPs: { type: 'array', items: { type: 'string' } },
  visibility: { type: 'string', enum: [...SKILL_VISIBILITIES] },
};

export const skillSchema: Schema = record({
  id: { type: 'string' },
  ...content,
  version: { type: 'integer', minimum: 1 },
  organizationId: { type: 'string' },
  ownerId: { type: 'string' },
  createdAt: timestamp,
  updatedAt: timestamp,
});

export const skillVersionSchema: Schema = record({
  skillId: { type: 'string' },
  version: { type: 'integer', minimum: 1 },
  ...content,
  organizationId: { type: 'string' },
  ownerId: { type: 'string' },
  createdBy: { type: 'string', description: 'Who made this version' },
  createdAt: { ...timestamp, description: 'When this version was made' },
});

export const skillResponse: Schema = record({ success: { type: 'boolean' }, skill: skillSchema });
export const skillListResponse: Schema = record({
  success: { type: 'boolean' },
  skills: { type: 'array', items: skillSchema },
  total: { type: 'integer' },
  nextCursor,
});
export const skillVersionResponse: Schema = record({ success: { type: 'boolean' }, version: skillVersionSchema });
export const skillVersionListResponse: Schema = record({
  success: { type: 'boolean' },
  versions: { type: 'array', items: skillVersionSchema },
  nextCursor,
});
