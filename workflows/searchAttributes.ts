/**
 * Custom search attributes registered on the Temporal namespace, so operators filter the Web UI by tenant,
 * agent and kind of work (`OrganizationId = "org_..."`). Safe in workflows, scripts and commands.
 */
import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';

/** Name → type, as registered by the dev server and docker-compose's setup. */
export const SEARCH_ATTRIBUTES = {
  OrganizationId: 'Keyword',
  AgentId: 'Keyword',
  WorkKind: 'Keyword',
} as const;

export const organizationIdKey = defineSearchAttributeKey('OrganizationId', SearchAttributeType.KEYWORD);
export const agentIdKey = defineSearchAttributeKey('AgentId', SearchAttributeType.KEYWORD);
export const workKindKey = defineSearchAttributeKey('WorkKind', SearchAttributeType.KEYWORD);
