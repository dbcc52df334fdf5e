/**
 * Client-library endpoints on the execution engine: POST /api/agent/execute and
 * GET /api/usage/organization/{orgId}. They accept a `td_` or a `svc_` token.
 */
import { startExecution } from '../../commands/executionStart';
import { organizationUsage } from '../../commands/usage';
import { NotFoundError } from '../../lib/errors';
import { route, type RouteSpec } from '../route';
import { executionStreamEvents } from '../v1/executions.schema';
import { wantsEventStream } from '../sse';
import { executeResponse } from '../v1/executions.schema';
import type { ExecutionRouteDeps } from '../deps';
import { clientGone, replyToExecution } from '../executionReply';
import { clientExecuteBody, usageParams, usageQuery, usageResponse } from './clientExecute.schema';

/**
 * @param deps app dependencies.
 * @returns the route declarations.
 */
export function clientExecuteRoutes(deps: ExecutionRouteDeps): RouteSpec[] {
  return [
    route({
      method: 'post',
      path: '/agent/execute',
      summary: 'Execute an agent (client library): same engine and answers as the v1 execute',
      tags: ['Executions'],
      auth: 'client',
      scope: 'chats:write',
      body: clientExecuteBody,
      responses: { 200: executeResponse },
      streams: true,
      events: executionStreamEvents,
      errors: [409],
      handler: async (ctx, { body }) => {
        const exec = await startExecution(
          deps,
          ctx.state.auth,
          body.characterId,
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
            source: 'client',
          },
          { gone: clientGone(ctx) }
        );
        await replyToExecution(deps, ctx, exec, body.stream || wantsEventStream(ctx));
      },
    }),
    route({
      method: 'get',
      path: '/usage/organization/:orgId',
      summary: 'Token and execution totals per period and per agent',
      tags: ['Usage'],
      auth: 'client',
      scope: 'usage:read',
      params: usageParams,
      query: usageQuery,
      responses: { 200: usageResponse },
      handler: async (ctx, { params, query }) => {
        const { orgId } = params;
        if (orgId !== ctx.state.auth.organizationId) throw new NotFoundError('Organization not found');
        ctx.body = { success: true, ...(await organizationUsage(ctx.state.auth, query)) };
      },
    }),
  ];
}
