/**
 * The MCP endpoint's tools. Each has a JSON Schema for its input (validated with the project's ajv, like the HTTP
 * routes' bodies) and calls the same command functions as the HTTP routes (commands/*.ts) with the caller's auth
 * context, so organization scoping is the same as on /api. Every call is logged with the request id.
 * Results: `structuredContent` (the JSON the matching /api route answers) and the same as text. A refusal the HTTP
 * routes answer with a 4xx (unknown id, another organization's resource, a busy chat) is a tool error
 * (`isError: true`, text `<code>: <message>`); invalid arguments are JSON-RPC `-32602`.
 */
import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import { findVisibleAgent, listAgents } from '../../commands/agents';
import { chatMessages, createChat, listChats, sendChatMessage } from '../../commands/chats';
import { startExecution } from '../../commands/executionStart';
import { awaitExecution } from '../../commands/executions';
import { listTasks } from '../../commands/tasks';
import { hasScope } from '../../commands/tokens';
import { check } from '../../lib/ajv';
import { ForbiddenError, StateConflictError, type AppError } from '../../lib/errors';
import { pageQueryProperties } from '../../lib/pagination';
import { CHAT_STATUSES, TASK_PRIORITIES, TASK_STATUSES, type ExecutionDoc } from '../../models';
import { presentCurrentAgent } from '../../presenters/agent';
import { presentChat, presentChatMessage, presentChatWork } from '../../presenters/chat';
import { presentTask } from '../../presenters/task';
import { translateError } from '../middlewares/errors';
import { requiredStr } from '../schemas';
import { MAX_MESSAGE_CHARS } from '../v1/executions.schema';
import { jobTools } from './jobTools';
import { missionTools } from './missionTools';
import { tool, toolInput, type McpTool, type ToolContext } from './tool';

const id = (description: string) => requiredStr(100, { description });
const message = requiredStr(MAX_MESSAGE_CHARS, { description: 'The user message' });
const wait = {
  type: 'boolean',
  default: false,
  description: 'Wait for the reply (progress notifications carry its text as it streams)',
} as const;

/**
 * Follows an execution to its end, sending its text deltas as progress notifications.
 * @returns the final status and reply.
 */
async function runToCompletion(
  ctx: ToolContext,
  exec: ExecutionDoc
): Promise<{ status: string; result: string; error: string | null }> {
  let step = 0;
  const done = await awaitExecution(ctx.deps, exec, {
    onEvent: (e) => {
      const delta = (e.data as { delta?: { text?: unknown } }).delta?.text;
      if (e.event === 'message' && typeof delta === 'string' && delta !== '') void ctx.progress(++step, delta);
    },
    signal: ctx.signal,
    // Its text goes out as progress notifications while it comes.
    live: true,
  });
  // A failed or cancelled execution is told as failed, with its `error` event's message.
  if (done.status !== 'completed') return { status: 'failed', result: '', error: done.error ?? 'failed' };
  return { status: done.status, result: done.result, error: null };
}

/** @returns every tool. */
export function mcpTools(): McpTool[] {
  return [...baseTools(), ...jobTools(), ...missionTools()];
}

function baseTools(): McpTool[] {
  return [
    tool({
      name: 'list_agents',

      scope: 'agents:read',
      title: 'List agents',
      description: 'The organization’s agents the caller can see, one page at a time (as GET /api/agents).',
      inputSchema: toolInput({ ...pageQueryProperties }),
      annotations: { readOnlyHint: true },
      call: async (args, ctx) => {
        const { items, total, nextCursor } = await listAgents(ctx.auth, args);
        return { agents: items.map(presentCurrentAgent), total, next_cursor: nextCursor };
      },
    }),
    tool({
      name: 'get_agent',

      scope: 'agents:read',
      title: 'Get an agent',
      description: 'One agent of the organization by id.',
      inputSchema: toolInput({ agent_id: id('An agent id (agt_…)') }, ['agent_id']),
      annotations: { readOnlyHint: true },
      call: async (args, ctx) => ({
        agent: presentCurrentAgent(await findVisibleAgent(ctx.auth, args.agent_id)),
      }),
    }),
    tool({
      name: 'execute_agent',

      scope: 'chats:write',
      title: 'Execute an agent',
      description:
        'Runs an agent on a message in a new conversation and answers its reply. The reply’s text streams as ' +
        'progress notifications when the call carries a progressToken.',
      inputSchema: toolInput(
        {
          agent_id: id('An agent id (agt_…)'),
          message,
          workspace_id: id('A workspace of the organization; default: the caller’s default workspace'),
        },
        ['agent_id', 'message']
      ),
      call: async (args, ctx) => {
        const exec = await startExecution(ctx.deps, ctx.auth, args.agent_id, {
          message: args.message,
          spaceId: args.workspace_id,
          source: 'mcp',
        });
        const outcome = await runToCompletion(ctx, exec);
        return { execution_id: exec._id, chat_id: exec.chatId, session_id: exec.sessionId, ...outcome };
      },
    }),
    tool({
      name: 'list_chats',

      scope: 'chats:read',
      title: 'List chats',
      description: 'The organization’s open chats, newest first (as GET /api/chats).',
      inputSchema: toolInput({
        ...pageQueryProperties,
        status: { type: 'string', enum: [...CHAT_STATUSES] },
        agent_id: id('Only chats with this agent'),
      }),
      annotations: { readOnlyHint: true },
      call: async (args, ctx) => {
        const { items, nextCursor } = await listChats(
          ctx.auth,
          { status: args.status, agentId: args.agent_id },
          { limit: args.limit, cursor: args.cursor }
        );
        return { chats: items.map(presentChat), next_cursor: nextCursor };
      },
    }),
    tool({
      name: 'create_chat',

      scope: 'chats:write',
      title: 'Create a chat',
      description: 'A durable chat with an agent in a workspace (as POST /api/chats).',
      inputSchema: toolInput(
        {
          agent_id: id('An agent of the organization'),
          workspace_id: id('A workspace of the organization; default: the caller’s active workspace'),
          title: requiredStr(200, { description: 'Default: the agent’s name' }),
        },
        ['agent_id']
      ),
      call: async (args, ctx) => {
        const chat = await createChat(ctx.auth, {
          agentId: args.agent_id,
          workspaceId: args.workspace_id,
          title: args.title,
        });
        return { chat: presentChat(chat) };
      },
    }),
    tool({
      name: 'send_message',

      scope: 'chats:write',
      title: 'Send a message to a chat',
      description:
        'The chat’s agent answers in an execution (as POST /api/chats/{id}/messages; refused while the previous ' +
        'reply runs). With `wait`, answers the reply too.',
      inputSchema: toolInput({ chat_id: id('A chat id (chat_…)'), message, wait }, ['chat_id', 'message']),
      call: async (args, ctx) => {
        const exec = await sendChatMessage(ctx.deps, ctx.auth, args.chat_id, args.message);
        const out: Record<string, unknown> = {
          message_id: `${exec._id}:user`,
          execution: { id: exec._id, status: exec.status },
        };
        if (args.wait === true) out.reply = await runToCompletion(ctx, exec);
        return out;
      },
    }),
    tool({
      name: 'read_messages',

      scope: 'chats:read',
      title: 'Read a chat’s messages',
      description: 'A chat’s messages in order and the work linked to them (as GET /api/chats/{id}/messages).',
      inputSchema: toolInput(
        {
          chat_id: id('A chat id (chat_…)'),
          limit: { type: 'integer', minimum: 1, maximum: 1000, default: 100 },
          cursor: { type: 'string', pattern: '^[0-9]{1,12}$', description: 'next_cursor of the previous page' },
        },
        ['chat_id']
      ),
      annotations: { readOnlyHint: true },
      call: async (args, ctx) => {
        const p = await chatMessages(ctx.auth, args.chat_id, {
          limit: args.limit,
          after: args.cursor === undefined ? undefined : Number(args.cursor),
        });
        return {
          chat: presentChat(p.chat),
          messages: p.messages.map(presentChatMessage),
          work: { executions: p.executions.map(presentChatWork), jobs: [] },
          next_cursor: p.next === null ? null : String(p.next),
        };
      },
    }),
    tool({
      name: 'list_tasks',

      scope: 'missions:read',
      title: 'List tasks',
      description: 'The organization’s tasks, newest first (filters: status, priority, assigned_to, workspace_id).',
      inputSchema: toolInput({
        ...pageQueryProperties,
        status: { type: 'string', enum: [...TASK_STATUSES] },
        priority: { type: 'string', enum: [...TASK_PRIORITIES] },
        assigned_to: id('A user id'),
        workspace_id: id('A workspace id'),
      }),
      annotations: { readOnlyHint: true },
      call: async (args, ctx) => {
        const { items, nextCursor } = await listTasks(
          ctx.auth,
          {
            status: args.status,
            priority: args.priority,
            assignedTo: args.assigned_to,
            spaceId: args.workspace_id,
          },
          { limit: args.limit, cursor: args.cursor }
        );
        return { tasks: items.map(presentTask), next_cursor: nextCursor };
      },
    }),
  ];
}

/** A tool's answer (MCP CallToolResult). */
export interface ToolResult {
  [key: string]: unknown;
  content: Array<{ type: 'text'; text: string }>;
  structuredContent?: Record<string, unknown>;
  isError?: boolean;
}

/**
 * Runs a tool call: validates the arguments, calls the tool, logs the call with the request id.
 * @param tool the tool.
 * @param rawArgs the call's arguments.
 * @param ctx the caller and the request.
 * @returns the result (a refusal is a tool error).
 * @throws McpError InvalidParams for arguments that do not match the tool's schema.
 */
export async function callTool(tool: McpTool, rawArgs: unknown, ctx: ToolContext): Promise<ToolResult> {
  const args = structuredClone((rawArgs ?? {}) as Record<string, unknown>);
  const problem = check(tool.inputSchema, args, 'body');
  if (problem) throw new McpError(ErrorCode.InvalidParams, problem);
  const started = Date.now();
  try {
    if (!hasScope(ctx.auth.scopes, tool.scope)) throw new ForbiddenError(`The token lacks the scope ${tool.scope}`);
    const out = await tool.call(args, ctx);
    ctx.log.info({ tool: tool.name, ms: Date.now() - started }, 'mcp tool call');
    return { content: [{ type: 'text', text: JSON.stringify(out) }], structuredContent: out };
  } catch (err) {
    const known: AppError | undefined = translateError(err, 0);
    if (known && known.status < 500) {
      ctx.log.info({ tool: tool.name, ms: Date.now() - started, refused: known.code }, 'mcp tool call refused');
      const error = {
        code: known.code,
        message: known.message,
        ...(known instanceof StateConflictError ? { current_state: known.currentState } : {}),
      };
      return {
        content: [{ type: 'text', text: `${known.code}: ${known.message}` }],
        structuredContent: { error },
        isError: true,
      };
    }
    ctx.log.error({ err, tool: tool.name, ms: Date.now() - started }, 'mcp tool call failed');
    const error = known ?? { code: 'internal_error', message: 'An unexpected error occurred' };
    return {
      content: [{ type: 'text', text: `${error.code}: ${error.message}` }],
      structuredContent: { error: { code: error.code, message: error.message } },
      isError: true,
    };
  }
}
