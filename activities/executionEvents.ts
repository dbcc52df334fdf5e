/**
 * The events of an execution's stream that its reply writes and reads back (SPEC "Agent execution stream"): text
 * deltas, tool calls and their results, and the rebuilding of an earlier attempt's tool rounds from them, so a
 * retried reply continues where the stream stands (activities/executionReply.ts).
 */
import type { ToolOutcome } from '../commands/agentFileTools';
import type { McpToolRef } from '../commands/agentMcpTools';
import type { LoggedEvent } from '../commands/eventLog';
import type { ModelContentBlock, ModelMessage } from '../lib/providers';
import { isTextDelta, textDeltaEvent, toolEventKind } from '../commands/executionSteps';

/** The v1 `message` event carrying a text delta: commands/executionSteps.ts, beside its test. */
export { textDeltaEvent };

/** @returns the text delivered so far in an execution's stream. */
export function deliveredText(events: LoggedEvent[]): string {
  return events
    .filter(isTextDelta)
    .map((e) => (e.data as { delta: { text: string } }).delta.text)
    .join('');
}

/**
 * @returns whether the event is one of those an execution's finish writes (activities/executionFinish.ts): the
 *   assistant message, `result` or `error`; the reply writes none of them.
 */
export function isFinishEvent(e: Pick<LoggedEvent, 'event' | 'data'>): boolean {
  if (e.event === 'result' || e.event === 'error') return true;
  return e.event === 'message' && (e.data as { messageType?: string }).messageType === 'assistant';
}

/** A tool call as recorded in the execution's stream (`tool_use` event). */
export interface ToolCall {
  id: string;
  name: string;
  input: Record<string, unknown>;
}

/**
 * The stream's `message` event of a call (`messageType: tool_use`) [docs/decisions.md "MCP server instances"]; an
 * MCP tool's also names its server and tool (`mcp`).
 */
export function toolUseEvent(call: ToolCall, mcp?: McpToolRef): Omit<LoggedEvent, 'seq'> {
  return {
    event: 'message',
    data: { messageType: 'tool_use', toolUseId: call.id, name: call.name, input: call.input, ...(mcp ? { mcp } : {}) },
  };
}

/** The stream's `message` event of a call's result (`messageType: tool_result`): what the model got. */
export function toolResultEvent(call: ToolCall, out: ToolOutcome, mcp?: McpToolRef): Omit<LoggedEvent, 'seq'> {
  return {
    event: 'message',
    data: {
      messageType: 'tool_result',
      toolUseId: call.id,
      name: call.name,
      content: out.content,
      isError: out.isError,
      ...(mcp ? { mcp } : {}),
    },
  };
}

/** An assistant turn that called tools, and the user turn with their results. */
export function toolTurns(text: string, calls: ToolCall[], results: Map<string, ToolOutcome>): ModelMessage[] {
  const assistant: ModelContentBlock[] = [
    ...(text.trim() !== '' ? [{ type: 'text' as const, text: text.trimEnd() }] : []),
    ...calls.map((c) => ({ type: 'tool_use' as const, id: c.id, name: c.name, input: c.input })),
  ];
  const user: ModelContentBlock[] = calls.map((c) => {
    const r = results.get(c.id)!;
    return { type: 'tool_result' as const, toolUseId: c.id, content: r.content, isError: r.isError };
  });
  return [
    { role: 'assistant', content: assistant },
    { role: 'user', content: user },
  ];
}

/**
 * Rebuilds the tool rounds an earlier attempt recorded in the execution's stream [docs/decisions.md "Agent file
 * tools"]: each round is the text streamed, the calls (`tool_use`), then their results (`tool_result`).
 * @param events the execution's events so far.
 * @returns the finished rounds as model turns, an open round (calls recorded, some results not), the text of the
 * round still streaming (the prefill), and how many rounds there were.
 */
export function replayToolRounds(events: LoggedEvent[]): {
  turns: ModelMessage[];
  open: { text: string; calls: ToolCall[]; results: Map<string, ToolOutcome> } | null;
  tail: string;
  rounds: number;
} {
  const turns: ModelMessage[] = [];
  let text = '';
  let calls: ToolCall[] = [];
  let results = new Map<string, ToolOutcome>();
  let rounds = 0;
  const resolved = (): boolean => calls.length > 0 && calls.every((c) => results.has(c.id));
  const close = (): void => {
    turns.push(...toolTurns(text, calls, results));
    text = '';
    calls = [];
    results = new Map();
  };
  for (const e of events) {
    if (isTextDelta(e)) {
      if (resolved()) close();
      text += (e.data as { delta: { text: string } }).delta.text;
    } else if (toolEventKind(e) === 'tool_use') {
      if (resolved()) close();
      if (calls.length === 0) rounds += 1;
      const d = e.data as { toolUseId: string; name: string; input: Record<string, unknown> };
      calls.push({ id: d.toolUseId, name: d.name, input: d.input });
    } else if (toolEventKind(e) === 'tool_result') {
      const d = e.data as { toolUseId: string; content: string; isError: boolean };
      results.set(d.toolUseId, { content: d.content, isError: d.isError });
    }
  }
  if (calls.length === 0) return { turns, open: null, tail: text, rounds };
  if (resolved()) {
    close();
    return { turns, open: null, tail: '', rounds };
  }
  return { turns, open: { text, calls, results }, tail: '', rounds };
}
