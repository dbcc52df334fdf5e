/**
 * /api/v1/keys: the caller's personal access tokens. The clear token is returned once, at creation.
 */
import { createToken, revokeToken } from '../../commands/tokens';
import { ValidationError } from '../../lib/errors';
import { paginate } from '../../lib/pagination';
import { ApiToken, type ApiTokenDoc } from '../../models';
import { presentApiKey } from '../../presenters/apiKey';
import { route, type RouteSpec } from '../route';
import { idParams, pageQuery, successMessage } from '../schemas';
import { keyCreateBody, keyCreatedResponse, keyListResponse } from './keys.schema';

const tags = ['Keys'];

/** @returns the route declarations. */
export function keyRoutes(): RouteSpec[] {
  return [
    route({
      method: 'get',
      path: '/keys',
      summary: "List the caller's personal access tokens (never the token itself)",
      tags,
      auth: 'v1',
      query: pageQuery(),
      responses: { 200: keyListResponse },
      handler: async (ctx, { query }) => {
        const { organizationId, userId } = ctx.state.auth;
        const page = query;
        const { items, nextCursor: next } = await paginate<ApiTokenDoc>(
          ApiToken,
          { organizationId, userId, kind: 'v1' },
          page
        );
        ctx.body = { success: true, keys: items.map(presentApiKey), nextCursor: next };
      },
    }),
    route({
      method: 'post',
      path: '/keys',
      summary: 'Create a personal access token; the clear `td_` token is in this response only',
      tags,
      auth: 'v1',
      body: keyCreateBody,
      responses: { 200: keyCreatedResponse },
      handler: async (ctx, { body }) => {
        const { name, expiresAt } = body;
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
    }),
    route({
      method: 'delete',
      path: '/keys/:id',
      summary: 'Revoke one of your personal access tokens',
      tags,
      auth: 'v1',
      params: idParams,
      responses: { 200: successMessage },
      handler: async (ctx, { params }) => {
        const { organizationId, userId } = ctx.state.auth;
        await revokeToken(organizationId, params.id, userId, 'v1');
        ctx.body = { success: true, message: 'Key revoked' };
      },
    }),
  ];
}
