/** An agent's name, read once per agent and shared by every row that shows it (its id when it cannot be read). */
import { useQuery } from '@tanstack/react-query';
import { api, unwrap } from '../api/client';

export function AgentName({ agentId }: { agentId: string }) {
  const agent = useQuery({
    queryKey: ['agents', 'one', agentId],
    queryFn: async () => unwrap(await api.GET('/api/v1/agents/{id}', { params: { path: { id: agentId } } })).agent,
    staleTime: 5 * 60_000,
  });
  return <>{agent.data?.name ?? agentId}</>;
}
