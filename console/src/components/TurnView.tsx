/** One exchange of a chat: the user's message (plain text), then the reply with its steps (collapsible). */
import { Box, Paper, Text } from '@mantine/core';
import type { Segment, Turn } from '../lib/transcript';
import { Markdown } from './Markdown';

function json(value: unknown): string {
  try {
    return JSON.stringify(value, null, 2);
  } catch {
    return String(value);
  }
}

function StepView({ segment }: { segment: Exclude<Segment, { kind: 'text' }> }) {
  if (segment.kind === 'subagent') {
    return (
      <details className="step">
        <summary>
          Sub-agent run ({segment.status}): {segment.agentId}
        </summary>
        <Text size="sm">Execution {segment.id}</Text>
      </details>
    );
  }
  const title = segment.mcp ? `MCP call: ${segment.mcp.server} › ${segment.mcp.tool}` : `Tool call: ${segment.name}`;
  const state = segment.result ? (segment.result.isError ? 'failed' : 'done') : 'running';
  return (
    <details className="step">
      <summary>
        {title} ({state})
      </summary>
      <Text size="xs" fw={600}>
        Input
      </Text>
      <pre>{json(segment.input)}</pre>
      {segment.result && (
        <>
          <Text size="xs" fw={600}>
            Result
          </Text>
          <pre>{segment.result.content}</pre>
        </>
      )}
    </details>
  );
}

export function TurnView({ turn }: { turn: Turn }) {
  const segments: Segment[] = turn.tracked
    ? turn.segments
    : turn.reply !== undefined
      ? [{ kind: 'text', text: turn.reply, complete: true }]
      : [];
  return (
    <Box component="li" style={{ listStyle: 'none' }} data-execution-id={turn.executionId}>
      {turn.user !== undefined && (
        <Paper withBorder p="sm" mb="xs" bg="var(--mantine-color-gray-0)" aria-label="Your message">
          <Text size="xs" c="dimmed">
            You
          </Text>
          <div className="turn-user" data-testid="user-message">
            {turn.user}
          </div>
        </Paper>
      )}
      <Paper p="sm" mb="md" aria-label="Reply" aria-busy={!turn.finished}>
        <Text size="xs" c="dimmed">
          Agent{turn.finished ? '' : ' (writing…)'}
        </Text>
        <div data-testid="reply">
          {segments.map((s, i) =>
            s.kind === 'text' ? <Markdown key={i} text={s.text} /> : <StepView key={`${s.kind}-${s.id}`} segment={s} />
          )}
        </div>
        {turn.error && (
          <Text c="red" size="sm" role="alert">
            {turn.error}
          </Text>
        )}
      </Paper>
    </Box>
  );
}
