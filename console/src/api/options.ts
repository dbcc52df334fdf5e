/**
 * What the agent and mission forms pick from: the organization's agents, skills and MCP servers (first 100 of
 * each, the API's largest page), as select options. One query per resource, shared by the pages.
 */
import { useQuery } from '@tanstack/react-query';
import { api, unwrap } from './client';

export interface Option {
  value: string;
  label: string;
}

/** @returns the organization's agents (id → name), for pickers and for naming agents in lists. */
export function useAgentOptions() {
  return useQuery({
    queryKey: ['agents', 'options'],
    queryFn: async () => {
      const data = unwrap(await api.GET('/api/agents', { params: { query: { limit: 100 } } }));
      return data.agents.map((a): Option => ({ value: a.id, label: a.name }));
    },
  });
}

/** @returns the organization's skills. */
export function useSkillOptions() {
  return useQuery({
    queryKey: ['skills', 'options'],
    queryFn: async () => {
      const data = unwrap(await api.GET('/api/v1/skills', { params: { query: { limit: 100 } } }));
      return data.skills.map((s): Option => ({ value: s.id, label: s.name }));
    },
  });
}

/** @returns the organization's MCP servers. */
export function useMcpServerOptions() {
  return useQuery({
    queryKey: ['mcp-servers', 'options'],
    queryFn: async () => {
      const data = unwrap(await api.GET('/api/v1/mcp-servers', { params: { query: { limit: 100 } } }));
      return data.mcpServers.map((s): Option => ({ value: s.id, label: s.name }));
    },
  });
}

/**
 * @param options the agents as options.
 * @param id an agent id.
 * @returns its name, or the id when it is not among them (archived, or beyond the first 100).
 */
export function agentName(options: Option[] | undefined, id: string): string {
  return options?.find((o) => o.value === id)?.label ?? id;
}
