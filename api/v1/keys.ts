/**
 * /api/v1/keys: the caller's personal access tokens. The clear token is returned once, at creation.
 */
import { createToken, revokeToken } from '../../commands/tokens';
import { ValidationError } from '../../lib/errors';
import { paginate } from '../../lib/pagination';
import { ApiToken, type ApiTokenDoc } from '../../models';
import { presentApiKey } from '../../presenters/apiKey';
import { input, type RouteSpec } from '../route';
import { idParams, nextCursor, pageQuery, record, requiredStr, successMessage } from '../schemas';
import { keySchema } from './keys.schema';

const tags = ['Keys'];

/** @returns the route declarations. */
export function keyRoutes(): RouteSpec[] {
  return [
    {
      method: 'get',
      path: '/keys',
      summary: "List the caller's personal access tokens (never the token itself)",
      tags,
      auth: 'v1',
      query: pageQuery(),
      responses: {
        200: record({ success: { type: 'boolean' }, keys: { type: 'array', items: keySchema }, nextCursor }),
      },
      handler: async (ctx) => {
        const { organizationId, userId } = ctx.state.auth;
        const page = input<unknown, { limit: number; cursor?: string }>(ctx).query;
        const { items, nextCursor: next } = await paginate<ApiTokenDoc>(
          ApiToken,
          { organizationId, userId, kind: 'v1' },
          page
        );
        ctx.body = { success: true, keys: items.map(presentApiKey), nextCursor: next };
      },
    },
    {
      method: 'post',
      path: '/keys',
      summary: 'Create a personal access token; the clear `td_` token is in this response only',
      tags,
      auth: 'v1',
      body: {
        type: 'object',
        additionalProperties: false,
        required: ['name'],
        properties: { name: requiredStr(200), expiresAt: { type: 'string', format: 'date-time', maxLength: 40 } },
      },
      responses: {
        200: record({ success: { type: 'boolean' }, key: keySchema, token: { type: 'string', pattern: '^td_' } }),
      },
      handler: async (ctx) => {
        const { name, expiresAt } = input<{ name: string; expiresAt?: string }>(ctx).body;
        const expiry = expiresAt ? new Date(expiresAt) : null;
        if (expiry && expiry.getTime() <= Date.now()) throw new ValidationError('expiresAt must be in the future');
        const { organizationId, userId } = ctx.state.auth;
        const { token, record: stored } = await createToken({
          organizationId,
          userId,
          kind: 'v1',
          name,
          expiresAt: expiry,
        });
        ctx.body = { success: true, key: presentApiKey(stored), token };
      },
    },
    {
      method: 'delete',
      path: '/keys/:id',
      summary: 'Revoke one of your personal access tokens',
      tags,
      auth: 'v1',
      params: idParams,
      responses: { 200: successMessage },
      handler: async (ctx) => {
        const { organizationId, userId } = ctx.state.auth;
        await revokeToken(organizationId, input(ctx).params.id, userId, 'v1');
        ctx.body = { success: true, message: 'Key revoked' };
      },
    },
  ];
}
