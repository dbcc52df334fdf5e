/**
 * The organization's OAuth clients of the MCP endpoint [docs/decisions.md "Security"]: its machine clients and the
 * clients its members authorized, listed and deleted (commands/oauthClients.ts). Deleting a machine client ends it
 * and every token it was issued; deleting a client of people ends every grant of this organization's members.
 */
import { deleteOAuthClient, listOAuthClients } from '../../commands/oauthClients';
import { route, type RouteSpec } from '../route';
import { idParams } from '../schemas';
import { clientDeletedResponse, clientListResponse } from './oauthClients.schema';

const tags = ['OAuth'];

/** @returns the route declarations. */
export function oauthClientRoutes(): RouteSpec[] {
  return [
    route({
      method: 'get',
      path: '/oauth-clients',
      summary:
        "The organization's OAuth clients of the MCP endpoint: its machine clients and those its members authorized",
      tags,
      auth: 'service',
      scope: 'mcp',
      responses: { 200: clientListResponse },
      handler: async (ctx) => {
        ctx.body = { clients: await listOAuthClients(ctx.state.auth.organizationId) };
      },
    }),
    route({
      method: 'delete',
      path: '/oauth-clients/:id',
      summary: 'Delete an OAuth client of the organization (a client of people: revoke what its members granted it)',
      tags,
      auth: 'service',
      scope: 'mcp',
      params: idParams,
      responses: { 200: clientDeletedResponse },
      handler: async (ctx, { params }) => {
        const { id } = params;
        await deleteOAuthClient(ctx.state.auth.organizationId, id);
        ctx.body = { id, deleted: true };
      },
    }),
  ];
}
