/**
 * Custom search attributes registered on the Temporal namespace, so operators filter the Web UI by tenant,
 * agent and kind of work (`OrganizationId = "org_..."`). Plain data: safe in workflows, scripts and commands.
 */
export const SEARCH_ATTRIBUTES = {
  OrganizationId: 'Keyword',
  AgentId: 'Keyword',
  WorkKind: 'Keyword',
} as const;
