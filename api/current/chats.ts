/**
 * /api/chats: durable chats over the execution engine (commands/chats.ts) and their event stream
 * (`chat:<chatId>` in the durable event log, written by the execution activities: activities/chatStream.ts).
 */
import {
  chatMessages,
  closeChat,
  isChatClosed,
  createChat,
  findChat,
  listChats,
  sendChatMessage,
  updateChatOptions,
} from '../../commands/chats';
import { chatStreamId } from '../../models';
import { forkChat } from '../../commands/chatForks';
import { listJobs } from '../../commands/jobs';
import { presentChat, presentChatMessage, presentChatWork } from '../../presenters/chat';
import { presentJobRef } from '../../presenters/job';
import { route, type RouteSpec } from '../route';
import { idParams } from '../schemas';
import { streamQuery, streamRecentEvents } from '../sse';
import type { ExecutionRouteDeps } from '../deps';
import { clientGone } from '../executionReply';
import {
  CHAT_REPLAY_EVENTS,
  chatCreateBody,
  chatDeletedResponse,
  chatEventsResponse,
  chatListQuery,
  chatListResponse,
  chatMessageBody,
  chatMessageCreatedResponse,
  chatMessagesQuery,
  chatMessagesResponse,
  chatOptionsBody,
  chatResponse,
  chatStreamEvents,
  chatForkBody,
  chatForkResponse,
} from './chats.schema';

const tags = ['Chats'];

/**
 * @param deps app dependencies.
 * @returns the route declarations.
 */
export function chatRoutes(deps: ExecutionRouteDeps): RouteSpec[] {
  return [
    route({
      method: 'get',
      path: '/chats',
      summary: 'List the organization’s open chats, newest first (filters: status, agent_id, workspace_id)',
      tags,
      auth: 'service',
      scope: 'chats:read',
      query: chatListQuery,
      responses: { 200: chatListResponse },
      handler: async (ctx, { query: q }) => {
        const { items, nextCursor } = await listChats(
          ctx.state.auth,
          { status: q.status, agentId: q.agent_id, workspaceId: q.workspace_id },
          { limit: q.limit, cursor: q.cursor }
        );
        ctx.body = { chats: items.map(presentChat), next_cursor: nextCursor };
      },
    }),
    route({
      method: 'post',
      path: '/chats',
      summary: 'Create a durable chat with an agent in a workspace (default: the caller’s active workspace)',
      tags,
      auth: 'service',
      scope: 'chats:write',
      body: chatCreateBody,
      responses: { 201: chatResponse },
      handler: async (ctx, { body }) => {
        const chat = await createChat(ctx.state.auth, {
          agentId: body.agent_id,
          workspaceId: body.workspace_id,
          title: body.title,
          model: body.model,
        });
        ctx.status = 201;
        ctx.body = { chat: presentChat(chat) };
      },
    }),
    route({
      method: 'get',
      path: '/chats/:id/messages',
      summary: 'Read a chat’s messages in order and the work linked to them (executions and their status)',
      tags,
      auth: 'service',
      scope: 'chats:read',
      params: idParams,
      query: chatMessagesQuery,
      responses: { 200: chatMessagesResponse },
      handler: async (ctx, { params, query }) => {
        const { limit, cursor } = query;
        const page = await chatMessages(ctx.state.auth, params.id, {
          limit,
          after: cursor === undefined ? undefined : Number(cursor),
        });
        // The jobs working in the chat (a job's iterations run in its own chat), newest first.
        const jobs = await listJobs(ctx.state.auth, { chatId: page.chat._id }, { limit: 100 });
        ctx.body = {
          chat: presentChat(page.chat),
          messages: page.messages.map(presentChatMessage),
          work: { executions: page.executions.map(presentChatWork), jobs: jobs.items.map(presentJobRef) },
          next_cursor: page.next === null ? null : String(page.next),
        };
      },
    }),
    route({
      method: 'post',
      path: '/chats/:id/messages',
      summary: 'Send a message: the chat’s agent answers in an execution (409 while the previous one runs)',
      tags,
      auth: 'service',
      scope: 'chats:write',
      params: idParams,
      body: chatMessageBody,
      responses: { 201: chatMessageCreatedResponse },
      errors: [409],
      handler: async (ctx, { params, body }) => {
        const { message } = body;
        const exec = await sendChatMessage(deps, ctx.state.auth, params.id, message, {
          gone: clientGone(ctx),
          concurrencyKey: body.concurrency_key,
          concurrencyLimit: body.concurrency_limit,
        });
        ctx.status = 201;
        ctx.body = {
          message: presentChatMessage({
            _id: `${exec._id}:user`,
            role: 'user',
            content: message,
            position: exec.turn * 2,
            executionId: exec._id,
            createdAt: exec.createdAt,
          }),
          execution: { id: exec._id, status: exec.status },
        };
      },
    }),
    route({
      method: 'get',
      path: '/chats/:id/events',
      summary: 'The chat’s event stream: replay after Last-Event-ID (else the last 100 events), then live',
      tags,
      auth: 'service',
      scope: 'chats:read',
      params: idParams,
      query: streamQuery,
      responses: { 200: chatEventsResponse },
      events: chatStreamEvents,
      handler: async (ctx, { params }) => {
        // The chat is read before the stream starts: an unknown chat is a 404, not an empty stream.
        const chat = await findChat(ctx.state.auth, params.id);
        await streamRecentEvents(ctx, deps, {
          streamId: chatStreamId(chat._id),
          replay: CHAT_REPLAY_EVENTS,
          isTerminal: () => false,
          isGone: () => isChatClosed(chat._id),
        });
      },
    }),
    route({
      method: 'post',
      path: '/chats/:id/fork',
      summary:
        'Fork a chat at a message: a new chat with the conversation up to it; at a user message, it (or a changed one) is sent again',
      tags,
      auth: 'service',
      scope: 'chats:write',
      params: idParams,
      body: chatForkBody,
      responses: { 201: chatForkResponse },
      errors: [409],
      handler: async (ctx, { params, body }) => {
        const { chat, execution } = await forkChat(
          deps,
          ctx.state.auth,
          params.id,
          { messageId: body.message_id, message: body.message },
          { gone: clientGone(ctx) }
        );
        ctx.status = 201;
        ctx.body = {
          chat: presentChat(chat),
          ...(execution ? { execution: { id: execution._id, status: execution.status } } : {}),
        };
      },
    }),
    route({
      method: 'patch',
      path: '/chats/:id/options',
      summary: 'Change a chat’s options: title, and the model of its next executions (null: the agent’s)',
      tags,
      auth: 'service',
      scope: 'chats:write',
      params: idParams,
      body: chatOptionsBody,
      responses: { 200: chatResponse },
      handler: async (ctx, { params, body }) => {
        ctx.body = { chat: presentChat(await updateChatOptions(ctx.state.auth, params.id, body)) };
      },
    }),
    route({
      method: 'delete',
      path: '/chats/:id',
      summary: 'Close and hide a chat (its routes then answer 404); an execution still running in it is cancelled',
      tags,
      auth: 'service',
      scope: 'chats:write',
      params: idParams,
      responses: { 200: chatDeletedResponse },
      handler: async (ctx, { params }) => {
        const { id } = params;
        const cancelled = await closeChat(deps, ctx.state.auth, id);
        ctx.body = { id, deleted: true, cancelled_execution_id: cancelled };
      },
    }),
  ];
}
