/**
 * A task's run (POST /api/v1/tasks/{id}/run): the execution's live output from its stream
 * (GET /api/v1/executions/{id}/stream, EventSource; it ends with the run and answers 204 once read), and a link to
 * the execution's page.
 */
import { Alert, Anchor, Badge, Group, Paper, Stack, Text } from '@mantine/core';
import { useEffect, useState } from 'react';
import { Link } from 'react-router';

type RunState = 'running' | 'completed' | 'failed';

export function TaskRun({ executionId }: { executionId: string }) {
  const [text, setText] = useState('');
  const [state, setState] = useState<RunState>('running');
  const [error, setError] = useState<string | null>(null);

  useEffect(() => {
    setText('');
    setState('running');
    setError(null);
    const source = new EventSource(`/api/v1/executions/${encodeURIComponent(executionId)}/stream`);
    const parse = (m: MessageEvent): Record<string, unknown> | undefined => {
      try {
        return JSON.parse(String(m.data)) as Record<string, unknown>;
      } catch {
        return undefined;
      }
    };
    source.addEventListener('message', (m) => {
      const data = parse(m);
      if (data?.messageType !== 'stream_event') return;
      const delta = data.delta as { text?: unknown } | undefined;
      if (typeof delta?.text === 'string') setText((t) => t + (delta.text as string));
    });
    source.addEventListener('result', () => {
      setState('completed');
      source.close();
    });
    source.addEventListener('error', (m) => {
      // A named `error` event of the stream (the run failed); a connection error has no data and is retried.
      const data = m instanceof MessageEvent ? parse(m) : undefined;
      if (!data) return;
      setState('failed');
      setError(typeof data.message === 'string' ? data.message : 'The run failed');
      source.close();
    });
    return () => source.close();
  }, [executionId]);

  return (
    <Paper withBorder p="sm" aria-label="Run output" role="region">
      <Stack gap="xs">
        <Group gap="xs" wrap="wrap">
          <Badge color={state === 'running' ? 'blue' : state === 'completed' ? 'green' : 'red'} variant="light">
            {state === 'running' ? 'Running…' : state}
          </Badge>
          <Anchor component={Link} to={`/executions/${encodeURIComponent(executionId)}`} size="sm">
            Execution {executionId}
          </Anchor>
        </Group>
        {text ? (
          <Text size="sm" style={{ whiteSpace: 'pre-wrap' }} data-testid="run-output">
            {text}
          </Text>
        ) : (
          state === 'running' && (
            <Text size="sm" c="dimmed">
              Waiting for the agent…
            </Text>
          )
        )}
        {error && (
          <Alert color="red" role="alert">
            {error}
          </Alert>
        )}
      </Stack>
    </Paper>
  );
}
