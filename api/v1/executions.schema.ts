/** JSON Schemas of agent execution and /api/v1/executions. */
import type { Schema } from '../../lib/ajv';
import { EXECUTION_STATUS_DESCRIPTION, EXECUTION_STATUSES } from '../../models/Execution';
import { mediaIdList } from './media.schema';
import {
  expiredEvent,
  nextCursor,
  nullableError,
  nullableStr,
  oneOfStrings,
  nullableTimestamp,
  pageQuery,
  record,
  requiredStr,
  str,
  timestamp,
} from '../schemas';

/** Largest user message accepted. */
export const MAX_MESSAGE_CHARS = 100_000;

/**
 * Caps of one run alone (docs/spend.md): it stops before its next model call, with a terminal `error` event whose
 * `reason` is `budget_reached`, once its own spend reaches one.
 */
export const runCapProperties = {
  maxTokens: {
    type: 'integer',
    minimum: 1,
    maximum: 1_000_000_000,
    description: 'Stop this run once its model calls used this many tokens (input + output)',
  },
  maxCostUsd: {
    type: 'number',
    exclusiveMinimum: 0,
    maximum: 1_000_000,
    description: 'Stop this run once its model calls cost this many USD (from the price table)',
  },
} as const;

/**
 * A caller's concurrency key (docs/fairness.md "Concurrency keys"): executions of the organization with the same key
 * run at most `concurrencyLimit` at once; the others wait in order, `queued`.
 */
export const concurrencyKeyProperties = {
  concurrencyKey: str(200, {
    description:
      'Executions with this key (per organization) run at most concurrencyLimit at once; the others wait in order (status `queued`)',
  }),
  concurrencyLimit: {
    type: 'integer',
    minimum: 1,
    maximum: 1000,
    description: 'Running executions allowed for concurrencyKey (default 1)',
  },
} as const;

export const executeBody = {
  type: 'object',
  additionalProperties: false,
  required: ['message'],
  properties: {
    message: requiredStr(MAX_MESSAGE_CHARS, { description: 'User message' }),
    spaceId: str(100, { description: 'Space for a new chat (default: the organization default space)' }),
    sessionId: str(100, { description: 'Existing session to continue' }),
    chatId: str(100, { description: 'Existing chat to continue' }),
    stream: { type: 'boolean', default: false, description: 'Answer as text/event-stream' },
    mediaIds: mediaIdList,
    ...runCapProperties,
    ...concurrencyKeyProperties,
  },
} as const;

export const executeResponse: Schema = record({
  success: { type: 'boolean' },
  executionId: { type: 'string' },
  chatId: { type: 'string' },
  sessionId: { type: 'string' },
  result: { type: 'string' },
});

/** Marker for text/event-stream responses (not validated as JSON). */
export const sseResponse: Schema = { sse: true, description: 'text/event-stream: meta, message*, result | error' };

/** The MCP server and tool a tool event is about (MCP tools only). */
const mcpRef = record({ serverId: { type: 'string' }, server: { type: 'string' }, tool: { type: 'string' } });

/** The events of an execution stream (SPEC "Agent execution stream"), in order: meta, message*, result | error. */
export const executionStreamEvents: Record<string, Schema> = {
  meta: record({ executionId: { type: 'string' }, chatId: { type: 'string' }, sessionId: { type: 'string' } }),
  // Right after `meta`, only for an execution that waits for a concurrency key (docs/fairness.md): it runs later.
  queued: record({
    executionId: { type: 'string' },
    kind: { type: 'string', enum: ['agent', 'key'], description: "`agent`: the agent's maxConcurrentExecutions" },
    key: { type: 'string', description: 'The concurrency key, or the agent id' },
  }),
  message: {
    oneOf: [
      record({
        messageType: { const: 'stream_event' },
        delta: record({ type: { const: 'text_delta' }, text: { type: 'string' } }),
      }),
      record({
        messageType: { const: 'assistant' },
        content: { type: 'array', items: record({ type: { const: 'text' }, text: { type: 'string' } }) },
      }),
      // A tool call, recorded before it runs [docs/decisions.md "MCP server instances"].
      record(
        {
          messageType: { const: 'tool_use' },
          toolUseId: { type: 'string' },
          name: {
            type: 'string',
            description: 'list_files, read_file, write_file, delegate_to_agent, or an MCP tool `<server>__<tool>`',
          },
          input: { type: 'object' },
          mcp: mcpRef,
        },
        ['mcp']
      ),
      // Its result, recorded before the model is asked again: what the model got.
      record(
        {
          messageType: { const: 'tool_result' },
          toolUseId: { type: 'string' },
          name: { type: 'string' },
          content: { type: 'string', description: 'The result as the model got it (cut at the tool’s output cap)' },
          isError: { type: 'boolean' },
          mcp: mcpRef,
        },
        ['mcp']
      ),
      // A sub-agent started by a `delegate_to_agent` call, then its end [docs/decisions.md "Sub-agents"]; its own
      // events are in its stream (GET /api/v1/executions/{executionId}/stream).
      record({
        messageType: { const: 'subagent_started' },
        toolUseId: { type: 'string' },
        executionId: { type: 'string', description: 'The child execution' },
        agentId: { type: 'string' },
      }),
      record({
        messageType: { const: 'subagent_finished' },
        toolUseId: { type: 'string' },
        executionId: { type: 'string' },
        agentId: { type: 'string' },
        status: { type: 'string', enum: ['completed', 'failed', 'cancelled'] },
        usage: record({ input_tokens: { type: 'integer' }, output_tokens: { type: 'integer' } }),
      }),
    ],
  },
  result: record({
    sessionId: { type: 'string' },
    usage: record({ input_tokens: { type: 'integer' }, output_tokens: { type: 'integer' } }),
  }),
  error: record({ message: { type: 'string' }, reason: { type: 'string', enum: ['budget_reached'] } }, ['reason']),
  expired: expiredEvent,
};

const usage = record({ input_tokens: { type: 'integer' }, output_tokens: { type: 'integer' } });

export const executionSchema: Schema = record({
  id: { type: 'string' },
  executionId: { type: 'string', pattern: '^exec-\\d+-[a-z0-9]+$' },
  status: { type: 'string', enum: [...EXECUTION_STATUSES], description: EXECUTION_STATUS_DESCRIPTION },
  agentId: { type: 'string' },
  userId: { type: 'string' },
  chatId: { type: 'string' },
  sessionId: { type: 'string' },
  spaceId: { type: 'string' },
  input: record({ message: { type: 'string' }, mediaIds: { type: 'array', items: { type: 'string' } } }, ['mediaIds']),
  result: nullableStr,
  error: nullableError,
  provider: { type: 'string', enum: ['anthropic', 'openai', 'builtin'] },
  model: { type: 'string' },
  modelNote: nullableStr,
  usage,
  parentExecutionId: nullableStr,
  rootExecutionId: { type: 'string' },
  /** A sub-agent's: the parent's `delegate_to_agent` call (docs/decisions.md "Sub-agents"). */
  parentToolCallId: nullableStr,
  depth: { type: 'integer', minimum: 0, description: 'Sub-agent nesting depth (0: started by a client)' },
  taskId: nullableStr,
  source: { type: 'string', enum: ['v1', 'client', 'chat', 'job', 'mcp', 'subagent'] },
  createdAt: timestamp,
  startedAt: nullableTimestamp,
  completedAt: nullableTimestamp,
  durationMs: { type: ['integer', 'null'] },
  /** The `x-request-id` of the request that started it: follow it in the logs (docs/operations.md "Operating it"). */
  requestId: nullableStr,
  /** A rerun's origin (POST /api/v1/executions/{id}/rerun): the execution and the step it was rerun from. */
  rerunOf: {
    oneOf: [{ type: 'null' }, record({ executionId: { type: 'string' }, fromStep: { type: 'integer' } })],
  },
});

export const executionResponse: Schema = record({ success: { type: 'boolean' }, execution: executionSchema });

export const executionListQuery = pageQuery({
  agentId: str(100),
  taskId: str(100, { description: 'Only the runs of this task (POST /api/v1/tasks/{id}/run)' }),
  status: oneOfStrings(EXECUTION_STATUSES, 'status'),
});

export const executionListResponse: Schema = record({
  success: { type: 'boolean' },
  executions: { type: 'array', items: executionSchema },
  nextCursor,
});

export const executionTreeResponse: Schema = {
  type: 'object',
  required: ['success', 'tree'],
  properties: { success: { type: 'boolean' }, tree: { $ref: '#/$defs/ExecutionTreeNode' } },
  $defs: {
    ExecutionTreeNode: {
      type: 'object',
      required: ['execution', 'children'],
      properties: {
        execution: executionSchema,
        children: { type: 'array', items: { $ref: '#/$defs/ExecutionTreeNode' } },
      },
    },
  },
};

/** POST /api/v1/executions/{id}/rerun [docs/decisions.md "Fork and rerun"]. */
export const rerunBody = {
  type: 'object',
  additionalProperties: false,
  required: ['fromStep'],
  properties: {
    fromStep: {
      type: 'integer',
      minimum: 1,
      description: 'The step to run again (GET /executions/{id}/steps): the steps before it are reused, not run again',
    },
    message: requiredStr(MAX_MESSAGE_CHARS, { description: 'A changed user message (default: the original’s)' }),
    stream: { type: 'boolean', default: false, description: 'Answer as text/event-stream' },
  },
} as const;

/** GET /api/v1/executions/{id}/steps. */
export const executionStepsResponse: Schema = record({
  success: { type: 'boolean' },
  steps: {
    type: 'array',
    items: record(
      {
        step: { type: 'integer', description: '1-based, in the order the steps happened' },
        kind: oneOfStrings(['model_turn', 'tool_call'], 'kind'),
        round: { type: 'integer', description: 'The model turn (1-based) the step belongs to' },
        toolUseId: { type: 'string' },
        name: { type: 'string' },
      },
      ['toolUseId', 'name']
    ),
  },
});
