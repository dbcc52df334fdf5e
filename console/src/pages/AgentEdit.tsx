/**
 * An agent: /agents/new creates one (POST /api/v1/agents), /agents/:agentId edits it (GET /api/v1/agents/{id},
 * PATCH /api/agents/{id}: the surface whose update takes the model) and archives it (DELETE /api/v1/agents/{id},
 * after an in-page confirmation).
 */
import { Alert, Anchor, Button, Group, Loader, Paper, Stack, Text, Title } from '@mantine/core';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { Link, useNavigate, useParams } from 'react-router';
import { api, unwrap } from '../api/client';
import { AgentForm, EMPTY_AGENT, type AgentFields } from '../components/AgentForm';
import { chatPath } from '../lib/paths';

function NewAgent() {
  const navigate = useNavigate();
  const queryClient = useQueryClient();
  const create = useMutation({
    mutationFn: async (f: AgentFields) =>
      unwrap(
        await api.POST('/api/v1/agents', {
          body: {
            name: f.name,
            systemPrompt: f.systemPrompt,
            visibility: f.visibility as 'organization',
            skillIds: f.skillIds,
            mcpServerIds: f.mcpServerIds,
            subAgentIds: f.subAgentIds,
            ...(f.model.trim() ? { model: f.model.trim() } : {}),
          },
        })
      ),
    onSuccess: (data) => {
      void queryClient.invalidateQueries({ queryKey: ['agents'] });
      void navigate(`/agents/${encodeURIComponent(data.id)}`);
    },
  });
  return (
    <Stack>
      <Title order={1}>New agent</Title>
      <AgentForm
        initial={EMPTY_AGENT}
        submitLabel="Create agent"
        saving={create.isPending}
        error={create.error?.message ?? null}
        onSubmit={(f) => create.mutate(f)}
      />
    </Stack>
  );
}

function EditAgent({ id }: { id: string }) {
  const navigate = useNavigate();
  const queryClient = useQueryClient();
  const [confirming, setConfirming] = useState(false);
  const agent = useQuery({
    queryKey: ['agents', id],
    queryFn: async () => unwrap(await api.GET('/api/v1/agents/{id}', { params: { path: { id } } })).agent,
  });
  const save = useMutation({
    mutationFn: async (f: AgentFields) =>
      unwrap(
        await api.PATCH('/api/agents/{id}', {
          params: { path: { id } },
          body: {
            name: f.name,
            system_prompt: f.systemPrompt,
            visibility: f.visibility as 'organization',
            skill_ids: f.skillIds,
            mcp_server_ids: f.mcpServerIds,
            sub_agent_ids: f.subAgentIds,
            ...(f.model.trim() ? { model: f.model.trim() } : {}),
          },
        })
      ),
    onSuccess: () => void queryClient.invalidateQueries({ queryKey: ['agents'] }),
  });
  const archive = useMutation({
    mutationFn: async () => unwrap(await api.DELETE('/api/v1/agents/{id}', { params: { path: { id } } })),
    onSuccess: () => {
      void queryClient.invalidateQueries({ queryKey: ['agents'] });
      void navigate('/agents');
    },
  });
  if (agent.isPending) return <Loader aria-label="Loading the agent" />;
  if (agent.isError)
    return (
      <Stack>
        <Title order={1}>Agent</Title>
        <Alert color="red" role="alert">
          {agent.error.message}
        </Alert>
      </Stack>
    );
  const a = agent.data;
  const initial: AgentFields = {
    name: a.name,
    systemPrompt: a.systemPrompt,
    model: a.model ?? '',
    visibility: a.visibility,
    skillIds: a.skillIds,
    mcpServerIds: a.mcpServerIds,
    subAgentIds: a.subAgentIds,
  };
  return (
    <Stack>
      <Title order={1}>{a.name}</Title>
      <Group gap="md" wrap="wrap">
        <Anchor
          component={Link}
          to={chatPath({ organizationId: a.organizationId, spaceId: a.spaceId, chatId: a.chatId })}
          aria-label={`Open chat with ${a.name}`}
        >
          Open chat
        </Anchor>
        <Anchor component={Link} to={`/executions?agentId=${encodeURIComponent(a.id)}`}>
          Executions
        </Anchor>
      </Group>
      <AgentForm
        key={a.updatedAt}
        initial={initial}
        agentId={a.id}
        submitLabel="Save"
        saving={save.isPending}
        error={save.error?.message ?? null}
        saved={save.isSuccess}
        onSubmit={(f) => save.mutate(f)}
      />
      <Paper withBorder p="md" maw={720}>
        <Stack gap="xs">
          <Title order={2} size="h4">
            Archive
          </Title>
          <Text size="sm">An archived agent stops working; its history is kept. It cannot be restored.</Text>
          {!confirming ? (
            <Group>
              <Button color="red" variant="light" onClick={() => setConfirming(true)}>
                Archive agent
              </Button>
            </Group>
          ) : (
            <Alert color="red" title={`Archive ${a.name}?`} role="alertdialog" aria-label="Confirm archive">
              <Group mt="xs">
                <Button color="red" onClick={() => archive.mutate()} loading={archive.isPending}>
                  Yes, archive
                </Button>
                <Button variant="default" onClick={() => setConfirming(false)}>
                  Keep it
                </Button>
              </Group>
            </Alert>
          )}
          {archive.isError && (
            <Alert color="red" role="alert">
              {archive.error.message}
            </Alert>
          )}
        </Stack>
      </Paper>
    </Stack>
  );
}

export function AgentEditPage() {
  const { agentId } = useParams();
  return agentId ? <EditAgent key={agentId} id={agentId} /> : <NewAgent />;
}
