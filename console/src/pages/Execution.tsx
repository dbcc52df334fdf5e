/**
 * One execution (GET /api/v1/executions/{id}): its status, agent, times, tokens, input and result, the tree of its
 * sub-agent runs (GET /api/v1/executions/{id}/tree), and **Cancel** while it is pending or running (POST
 * /api/v1/executions/{id}/cancel). A live one is read again every 2 s until it ends.
 */
import { Alert, Anchor, Button, Group, Loader, Paper, SimpleGrid, Stack, Text, Title } from '@mantine/core';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import type { ReactNode } from 'react';
import { Link, useParams } from 'react-router';
import { api, unwrap } from '../api/client';
import { agentName, useAgentOptions } from '../api/options';
import { ExecutionStatus, isLive, tokens, when } from '../components/ExecutionParts';
import { ExecutionTree } from '../components/ExecutionTree';
import { Markdown } from '../components/Markdown';

const POLL_MS = 2000;

function Field({ label, children }: { label: string; children: ReactNode }) {
  return (
    <div>
      <Text size="xs" c="dimmed">
        {label}
      </Text>
      <div>{children}</div>
    </div>
  );
}

export function ExecutionPage() {
  const id = useParams().executionId!;
  const queryClient = useQueryClient();
  const agents = useAgentOptions();
  const execution = useQuery({
    queryKey: ['executions', id],
    queryFn: async () => unwrap(await api.GET('/api/v1/executions/{id}', { params: { path: { id } } })).execution,
    refetchInterval: (q) => (q.state.data && isLive(q.state.data.status) ? POLL_MS : false),
  });
  const live = execution.data ? isLive(execution.data.status) : false;
  const tree = useQuery({
    queryKey: ['executions', id, 'tree'],
    queryFn: async () => unwrap(await api.GET('/api/v1/executions/{id}/tree', { params: { path: { id } } })).tree,
    refetchInterval: live ? POLL_MS : false,
  });
  const cancel = useMutation({
    mutationFn: async () => unwrap(await api.POST('/api/v1/executions/{id}/cancel', { params: { path: { id } } })),
    onSuccess: (data) => {
      queryClient.setQueryData(['executions', id], data.execution);
      void queryClient.invalidateQueries({ queryKey: ['executions'] });
    },
  });
  if (execution.isPending) return <Loader aria-label="Loading the execution" />;
  if (execution.isError)
    return (
      <Stack>
        <Title order={1}>Execution</Title>
        <Alert color="red" role="alert">
          {execution.error.message}
        </Alert>
      </Stack>
    );
  const e = execution.data;
  const name = agentName(agents.data, e.agentId);
  return (
    <Stack>
      <Group justify="space-between" align="flex-end" wrap="wrap">
        <Title order={1} style={{ overflowWrap: 'anywhere' }}>
          Execution of {name}
        </Title>
        {live && (
          <Button color="red" variant="light" onClick={() => cancel.mutate()} loading={cancel.isPending}>
            Cancel
          </Button>
        )}
      </Group>
      {cancel.isError && (
        <Alert color="red" role="alert">
          {cancel.error.message}
        </Alert>
      )}
      <SimpleGrid cols={{ base: 2, sm: 3, lg: 6 }}>
        <Field label="Status">
          <span role="status" aria-label={`Status: ${e.status}`}>
            <ExecutionStatus status={e.status} />
          </span>
        </Field>
        <Field label="Agent">
          <Anchor component={Link} to={`/agents/${encodeURIComponent(e.agentId)}`}>
            {name}
          </Anchor>
        </Field>
        <Field label="Started">
          <Text size="sm">{when(e.startedAt ?? e.createdAt)}</Text>
        </Field>
        <Field label="Ended">
          <Text size="sm">{when(e.completedAt)}</Text>
        </Field>
        <Field label="Tokens">
          <Text size="sm">{tokens(e.usage)}</Text>
        </Field>
        <Field label="Model">
          <Text size="sm" style={{ overflowWrap: 'anywhere' }}>
            {e.model}
          </Text>
        </Field>
      </SimpleGrid>
      <Paper withBorder p="sm">
        <Text size="xs" c="dimmed">
          Message
        </Text>
        <div className="turn-user">{e.input.message}</div>
      </Paper>
      <Paper withBorder p="sm" aria-label="Result">
        <Text size="xs" c="dimmed">
          Result
        </Text>
        {e.result ? (
          <Markdown text={e.result} />
        ) : (
          <Text size="sm" c="dimmed">
            {live ? 'Still working…' : 'No result.'}
          </Text>
        )}
        {e.error && (
          <Text c="red" size="sm" role="alert">
            {e.error.message}
          </Text>
        )}
      </Paper>
      <Title order={2} size="h3">
        Sub-agent runs
      </Title>
      {tree.isPending && <Loader aria-label="Loading the tree" />}
      {tree.isError && (
        <Alert color="red" role="alert">
          {tree.error.message}
        </Alert>
      )}
      {tree.data && <ExecutionTree node={tree.data} agents={agents.data} currentId={e.id} />}
      {tree.data && tree.data.children.length === 0 && (
        <Text size="sm" c="dimmed">
          No sub-agent runs.
        </Text>
      )}
      <Group gap="md" wrap="wrap">
        {e.parentExecutionId && (
          <Anchor component={Link} to={`/executions/${encodeURIComponent(e.parentExecutionId)}`}>
            Parent execution
          </Anchor>
        )}
        <Anchor component={Link} to={`/executions?agentId=${encodeURIComponent(e.agentId)}`}>
          Other executions of {name}
        </Anchor>
      </Group>
    </Stack>
  );
}
