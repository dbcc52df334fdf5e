/** JSON Schemas of the current surface's /api/chats (requests, responses, and the chat stream's events). */
import type { Schema } from '../../lib/ajv';
import { CHAT_STATUSES } from '../../models/Chat';
import { EXECUTION_STATUS_DESCRIPTION, EXECUTION_STATUSES } from '../../models/Execution';
import { JOB_STATUSES } from '../../models/Job';
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
import { AGENT_LIMITS } from '../v1/agents.schema';
import { MAX_MESSAGE_CHARS } from '../v1/executions.schema';

/** Events replayed to a client that names no position (`Last-Event-ID`): the stream's last ones. */
export const CHAT_REPLAY_EVENTS = 100;

/** `concurrency_limit` beside a `concurrency_key`: on a chat message and on a mission task's start-work. */
export const concurrencyLimitSchema = {
  type: 'integer',
  minimum: 1,
  maximum: 1000,
  description: 'Running executions allowed for concurrency_key (default 1)',
} as const;

const chatStatus = oneOfStrings(CHAT_STATUSES, 'status');
const nullableModel = {
  type: ['string', 'null'],
  minLength: 1,
  maxLength: AGENT_LIMITS.model,
  description: 'Model of the chat’s next executions instead of its agent’s (`null`: the agent’s again)',
} as const;

export const chatCreateBody = {
  type: 'object',
  additionalProperties: false,
  required: ['agent_id'],
  properties: {
    agent_id: requiredStr(100, { description: 'An agent of the organization' }),
    workspace_id: requiredStr(100, {
      description: 'A workspace of the organization; default: the caller’s active workspace (else 400)',
    }),
    title: requiredStr(200, { description: 'Default: the agent’s name' }),
    model: nullableModel,
  },
} as const;

export const chatOptionsBody = {
  type: 'object',
  additionalProperties: false,
  properties: { title: requiredStr(200), model: nullableModel },
} as const;

export const chatListQuery = pageQuery({
  status: chatStatus,
  agent_id: str(100),
  workspace_id: str(100),
});

export const chatMessagesQuery = {
  type: 'object',
  additionalProperties: false,
  properties: {
    limit: { type: 'integer', minimum: 1, maximum: 1000, default: 100, description: 'Messages per page' },
    cursor: {
      type: 'string',
      pattern: '^[0-9]{1,12}$',
      'x-message': 'Invalid cursor',
      description: 'next_cursor of the previous page',
    },
  },
} as const;

export const chatMessageBody = {
  type: 'object',
  additionalProperties: false,
  required: ['message'],
  properties: {
    message: requiredStr(MAX_MESSAGE_CHARS, { description: 'The user message' }),
    concurrency_key: str(200, {
      description:
        'Executions with this key (per organization) run at most concurrency_limit at once; the others wait in order (status `queued`)',
    }),
    concurrency_limit: concurrencyLimitSchema,
  },
} as const;

export const chatSchema: Schema = record({
  id: { type: 'string' },
  organization_id: { type: 'string' },
  workspace_id: { type: 'string' },
  agent_id: nullableStr,
  owner_id: { type: 'string' },
  title: { type: 'string' },
  subtitle: nullableStr,
  last_message: nullableStr,
  session_id: nullableStr,
  status: { type: 'string', enum: [...CHAT_STATUSES] },
  options: record({ model: nullableStr }),
  /** A fork's origin (POST /api/chats/{id}/fork, or a rerun's conversation); null otherwise. */
  forked_from: {
    oneOf: [
      { type: 'null' },
      record({ chat_id: { type: 'string' }, message_id: { type: 'string' }, execution_id: { type: 'string' } }, [
        'execution_id',
      ]),
    ],
  },
  closed: { type: 'boolean' },
  closed_at: nullableTimestamp,
  created_at: timestamp,
  updated_at: timestamp,
});

const messageRecord = (role?: 'user' | 'assistant'): Schema =>
  record({
    id: { type: 'string' },
    role: role ? { const: role } : { type: 'string', enum: ['user', 'assistant'] },
    content: { type: 'string' },
    position: { type: 'integer' },
  });

export const chatMessageSchema: Schema = record({
  id: { type: 'string' },
  role: { type: 'string', enum: ['user', 'assistant'] },
  content: { type: 'string' },
  position: { type: 'integer' },
  execution_id: { type: 'string' },
  created_at: timestamp,
});

export const chatWorkSchema: Schema = record({
  id: { type: 'string' },
  kind: { const: 'execution' },
  status: { type: 'string', enum: [...EXECUTION_STATUSES] },
  provider: { type: 'string' },
  model: { type: 'string' },
  error: nullableError,
  created_at: timestamp,
  completed_at: nullableTimestamp,
});

export const chatResponse: Schema = record({ chat: chatSchema });
export const chatListResponse: Schema = record({
  chats: { type: 'array', items: chatSchema },
  next_cursor: nextCursor,
});
export const chatMessagesResponse: Schema = record({
  chat: chatSchema,
  messages: { type: 'array', items: chatMessageSchema },
  work: record({
    executions: {
      type: 'array',
      items: chatWorkSchema,
      description: 'The executions of the messages on this page, in message order, with their status',
    },
    jobs: {
      type: 'array',
      items: record({
        id: { type: 'string' },
        title: { type: 'string' },
        status: { type: 'string', enum: [...JOB_STATUSES] },
        created_at: nullableTimestamp,
      }),
      description: 'The jobs working in the chat (a job’s iterations run in its own chat), newest first, at most 100',
    },
  }),
  next_cursor: nextCursor,
});
export const chatMessageCreatedResponse: Schema = record({
  message: chatMessageSchema,
  execution: record({
    id: { type: 'string' },
    status: { type: 'string', enum: [...EXECUTION_STATUSES], description: EXECUTION_STATUS_DESCRIPTION },
  }),
});
/** POST /api/chats/{id}/fork [docs/decisions.md "Fork and rerun"]. */
export const chatForkBody = {
  type: 'object',
  additionalProperties: false,
  required: ['message_id'],
  properties: {
    message_id: requiredStr(200, {
      description:
        'The message to fork from: the fork holds the conversation up to it (an assistant message), or the turns before it and sends it again (a user message)',
    }),
    message: requiredStr(MAX_MESSAGE_CHARS, {
      description: 'From a user message only: the changed message sent in its place (default: the original)',
    }),
  },
} as const;
export const chatForkResponse: Schema = record(
  {
    chat: chatSchema,
    execution: record({
      id: { type: 'string' },
      status: { type: 'string', enum: [...EXECUTION_STATUSES], description: EXECUTION_STATUS_DESCRIPTION },
    }),
  },
  ['execution']
);
export const chatDeletedResponse: Schema = record({
  id: { type: 'string' },
  deleted: { type: 'boolean' },
  cancelled_execution_id: nullableStr,
});

/** The text/event-stream answer of GET /api/chats/{id}/events. */
export const chatEventsResponse: Schema = {
  sse: true,
  description:
    'text/event-stream: the chat’s events after Last-Event-ID (else its last ' +
    `${CHAT_REPLAY_EVENTS}), then live; never ends by itself`,
};

const ids = { chat_id: { type: 'string' }, execution_id: { type: 'string' } };

/**
 * The chat stream's events (written by activities/chatStream.ts). A job iteration in the chat that asks for a human
 * ends with `chat.status` `needs_attention` and `review` (what the job waits for); the job's own artifacts and review
 * changes are on its stream (GET /api/jobs/{id}/events).
 */
/** The MCP server and tool a tool event is about (MCP tools only). */
const chatMcpRef = record({ server_id: { type: 'string' }, server: { type: 'string' }, tool: { type: 'string' } });

export const chatStreamEvents: Record<string, Schema> = {
  'message.created': record({ ...ids, message: messageRecord('user') }),
  'message.delta': record({ ...ids, message_id: { type: 'string' }, text: { type: 'string' } }),
  'message.completed': record({ ...ids, message: messageRecord('assistant') }),
  'chat.status': record(
    {
      ...ids,
      status: { type: 'string', enum: [...CHAT_STATUSES] },
      error: { oneOf: [{ type: 'null' }, record({ message: { type: 'string' } })] },
      review: record({
        job_id: { type: 'string' },
        state: { type: 'string', enum: ['awaiting_review', 'blocked'] },
        question: nullableStr,
      }),
    },
    ['review']
  ),
  'tool.call': record(
    {
      ...ids,
      tool_use_id: { type: 'string' },
      name: {
        type: 'string',
        description:
          'list_files, read_file, write_file, delegate_to_agent, or an MCP tool `<server>__<tool>` (docs/decisions.md)',
      },
      input: { type: 'object' },
      mcp: chatMcpRef,
    },
    ['mcp']
  ),
  'tool.result': record(
    {
      ...ids,
      tool_use_id: { type: 'string' },
      name: { type: 'string' },
      content: { type: 'string', description: 'What the model got (an MCP tool’s answer cut at its output cap)' },
      is_error: { type: 'boolean' },
      mcp: chatMcpRef,
    },
    ['mcp']
  ),
  // A sub-agent started by a `delegate_to_agent` call, then its end (docs/decisions.md "Sub-agents").
  'subagent.started': record({
    ...ids,
    tool_use_id: { type: 'string' },
    subagent_execution_id: { type: 'string' },
    agent_id: { type: 'string' },
  }),
  'subagent.finished': record({
    ...ids,
    tool_use_id: { type: 'string' },
    subagent_execution_id: { type: 'string' },
    agent_id: { type: 'string' },
    status: { type: 'string', enum: ['completed', 'failed', 'cancelled'] },
    usage: record({ input_tokens: { type: 'integer' }, output_tokens: { type: 'integer' } }),
  }),
  expired: expiredEvent,
};
