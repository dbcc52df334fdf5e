/**
 * Agent execution (POST /api/v1/agents/{id}/execute: JSON or SSE) and /api/v1/executions (list, read, tree,
 * cancel, stream). Execution runs as workflow `execution-<id>`; this layer only starts, streams and reads.
 */
import { executionSteps, rerunExecution } from '../../commands/chatForks';
import { startExecution } from '../../commands/executionStart';
import {
  cancelExecution,
  executionTree,
  findExecution,
  isExecutionTerminal,
  listExecutions,
} from '../../commands/executions';
import { TERMINAL_EXECUTION_STATUSES, type ExecutionDoc, type ExecutionStatus } from '../../models';
import { presentExecution } from '../../presenters/execution';
import type { ExecutionRouteDeps } from '../deps';
import { clientGone, replyToExecution } from '../executionReply';
import { route, type RouteSpec } from '../route';
import { idParams } from '../schemas';
import { lastEventId, streamEvents, streamFullyRead, streamQuery, wantsEventStream } from '../sse';
import {
  executeBody,
  executeResponse,
  executionListQuery,
  executionListResponse,
  executionResponse,
  executionTreeResponse,
  executionStepsResponse,
  executionStreamEvents,
  rerunBody,
  sseResponse,
} from './executions.schema';

const tags = ['Executions'];

interface Node {
  execution: Record<string, unknown>;
  children: Node[];
}

function buildTree(root: ExecutionDoc, all: ExecutionDoc[]): Node {
  const byParent = new Map<string, ExecutionDoc[]>();
  for (const e of all) {
    if (!e.parentExecutionId) continue;
    const list = byParent.get(e.parentExecutionId) ?? [];
    list.push(e);
    byParent.set(e.parentExecutionId, list);
  }
  const node = (e: ExecutionDoc, depth: number): Node => ({
    execution: presentExecution(e),
    children: depth > 50 ? [] : (byParent.get(e._id) ?? []).map((c) => node(c, depth + 1)),
  });
  return node(root, 0);
}

/**
 * @param deps app dependencies.
 * @returns the route declarations.
 */
export function executionRoutes(deps: ExecutionRouteDeps): RouteSpec[] {
  return [
    route({
      method: 'post',
      path: '/agents/:id/execute',
      summary: 'Execute an agent: JSON reply, or text/event-stream with `stream: true` / `Accept: text/event-stream`',
      tags: ['Agents', ...tags],
      auth: 'v1',
      params: idParams,
      body: executeBody,
      responses: { 200: executeResponse },
      streams: true,
      events: executionStreamEvents,
      errors: [409],
      handler: async (ctx, { params, body }) => {
        const exec = await startExecution(
          deps,
          ctx.state.auth,
          params.id,
          {
            message: body.message,
            spaceId: body.spaceId,
            sessionId: body.sessionId,
            chatId: body.chatId,
            mediaIds: body.mediaIds,
            maxTokens: body.maxTokens,
            maxCostUsd: body.maxCostUsd,
            concurrencyKey: body.concurrencyKey,
            concurrencyLimit: body.concurrencyLimit,
            source: 'v1',
          },
          { gone: clientGone(ctx) }
        );
        await replyToExecution(deps, ctx, exec, body.stream || wantsEventStream(ctx));
      },
    }),
    route({
      method: 'get',
      path: '/executions',
      summary: 'List executions of the organization (optionally of one agent), newest first',
      tags,
      auth: 'v1',
      query: executionListQuery,
      responses: { 200: executionListResponse },
      handler: async (ctx, { query }) => {
        const { limit, cursor, agentId, status, taskId } = query;
        const filters = { agentId, status, taskId };
        const { items, nextCursor } = await listExecutions(ctx.state.auth, filters, { limit, cursor });
        ctx.body = { success: true, executions: items.map(presentExecution), nextCursor };
      },
    }),
    route({
      method: 'get',
      path: '/executions/:id',
      summary: 'Execution details',
      tags,
      auth: 'v1',
      params: idParams,
      responses: { 200: executionResponse },
      handler: async (ctx, { params }) => {
        ctx.body = {
          success: true,
          execution: presentExecution(await findExecution(ctx.state.auth, params.id)),
        };
      },
    }),
    route({
      method: 'get',
      path: '/executions/:id/tree',
      summary: 'The execution and its descendants',
      tags,
      auth: 'v1',
      params: idParams,
      responses: { 200: executionTreeResponse },
      handler: async (ctx, { params }) => {
        const { root, all } = await executionTree(ctx.state.auth, params.id);
        ctx.body = { success: true, tree: buildTree(root, all) };
      },
    }),
    route({
      method: 'post',
      path: '/executions/:id/cancel',
      summary: 'Cancel a pending or running execution (aborts the model request)',
      tags,
      auth: 'v1',
      params: idParams,
      responses: { 200: executionResponse },
      handler: async (ctx, { params }) => {
        const exec = await cancelExecution(deps, ctx.state.auth, params.id);
        ctx.body = { success: true, execution: presentExecution(exec) };
      },
    }),
    route({
      method: 'get',
      path: '/executions/:id/steps',
      summary: 'The steps of a finished execution (each model turn and tool call, in order), to rerun from one',
      tags,
      auth: 'v1',
      params: idParams,
      responses: { 200: executionStepsResponse },
      errors: [409, 410],
      handler: async (ctx, { params }) => {
        ctx.body = { success: true, steps: await executionSteps(ctx.state.auth, params.id) };
      },
    }),
    route({
      method: 'post',
      path: '/executions/:id/rerun',
      summary:
        'Rerun a finished execution from one of its steps, in a fork of its conversation: the steps before it are reused (no tool called again, no model turn billed again); JSON or text/event-stream as execute',
      tags,
      auth: 'v1',
      params: idParams,
      body: rerunBody,
      responses: { 200: executeResponse },
      streams: true,
      events: executionStreamEvents,
      errors: [409, 410],
      handler: async (ctx, { params, body }) => {
        const exec = await rerunExecution(
          deps,
          ctx.state.auth,
          params.id,
          { fromStep: body.fromStep, message: body.message },
          { gone: clientGone(ctx) }
        );
        await replyToExecution(deps, ctx, exec, body.stream || wantsEventStream(ctx));
      },
    }),
    route({
      method: 'get',
      path: '/executions/:id/stream',
      summary:
        'Join an execution stream (replay after Last-Event-ID or ?lastEventId=, then live); ends with the terminal event; 204 once read to the end',
      tags,
      auth: 'v1',
      params: idParams,
      query: streamQuery,
      responses: { 200: sseResponse, 204: streamFullyRead },
      events: executionStreamEvents,
      handler: async (ctx, { params }) => {
        const afterSeq = lastEventId(ctx);
        const exec = await findExecution(ctx.state.auth, params.id);
        await streamEvents(ctx, {
          streamId: exec._id,
          afterSeq,
          tailer: deps.events,
          shutdown: deps.shutdown,
          isTerminal: isExecutionTerminal,
          heartbeatMs: deps.config.sseHeartbeatMs,
          ended: TERMINAL_EXECUTION_STATUSES.includes(exec.status as ExecutionStatus),
        });
      },
    }),
  ];
}
