/**
 * Client-library endpoints on the execution engine: POST /api/agent/execute and
 * GET /api/usage/organization/{orgId}. They accept a `td_` or a `svc_` token.
 */
import { startExecution } from '../../commands/executions';
import { organizationUsage, type UsagePeriod } from '../../commands/usage';
import { NotFoundError } from '../../lib/errors';
import { input, type RouteSpec } from '../route';
import { requiredStr, str } from '../schemas';
import { executionStreamEvents } from '../v1/executions.schema';
import { wantsEventStream } from '../sse';
import { executeResponse, MAX_MESSAGE_CHARS } from '../v1/executions.schema';
import { mediaIdList } from '../v1/media.schema';
import type { ExecutionRouteDeps } from '../deps';
import { clientGone, replyToExecution } from '../executionReply';
import { usageResponse } from './clientExecute.schema';

/**
 * @param deps app dependencies.
 * @returns the route declarations.
 */
export function clientExecuteRoutes(deps: ExecutionRouteDeps): RouteSpec[] {
  return [
    {
      method: 'post',
      path: '/agent/execute',
      summary: 'Execute an agent (client library): same engine and answers as the v1 execute',
      tags: ['Executions'],
      auth: 'client',
      scope: 'chats:write',
      body: {
        type: 'object',
        additionalProperties: false,
        required: ['characterId', 'message'],
        properties: {
          characterId: requiredStr(100, { description: 'Agent id' }),
          message: requiredStr(MAX_MESSAGE_CHARS),
          spaceId: str(100),
          sessionId: str(100),
          chatId: str(100),
          stream: { type: 'boolean', default: false },
          mediaIds: mediaIdList,
        },
      },
      responses: { 200: executeResponse },
      streams: true,
      events: executionStreamEvents,
      errors: [409],
      handler: async (ctx) => {
        const body = input<{
          characterId: string;
          message: string;
          spaceId?: string;
          sessionId?: string;
          chatId?: string;
          stream: boolean;
          mediaIds?: string[];
        }>(ctx).body;
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
            source: 'client',
          },
          { gone: clientGone(ctx) }
        );
        await replyToExecution(deps, ctx, exec, body.stream || wantsEventStream(ctx));
      },
    },
    {
      method: 'get',
      path: '/usage/organization/:orgId',
      summary: 'Token and execution totals per period and per agent',
      tags: ['Usage'],
      auth: 'client',
      scope: 'usage:read',
      params: {
        type: 'object',
        required: ['orgId'],
        properties: { orgId: { type: 'string', minLength: 1, maxLength: 100 } },
      },
      query: {
        type: 'object',
        additionalProperties: false,
        properties: {
          period: {
            type: 'string',
            enum: ['daily', 'weekly', 'monthly'],
            default: 'daily',
            'x-message': 'Invalid period. Must be: daily, weekly, monthly',
          },
          start: { type: 'string', format: 'date', 'x-message': 'start must be a date (YYYY-MM-DD)' },
          end: { type: 'string', format: 'date', 'x-message': 'end must be a date (YYYY-MM-DD)' },
        },
      },
      responses: { 200: usageResponse },
      handler: async (ctx) => {
        const { orgId } = input<unknown, unknown, { orgId: string }>(ctx).params;
        if (orgId !== ctx.state.auth.organizationId) throw new NotFoundError('Organization not found');
        const query = input<unknown, { period: UsagePeriod; start?: string; end?: string }>(ctx).query;
        ctx.body = { success: true, ...(await organizationUsage(ctx.state.auth, query)) };
      },
    },
  ];
}
