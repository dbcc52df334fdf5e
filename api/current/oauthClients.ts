/**
 * The organization's OAuth clients of the MCP endpoint [docs/decisions.md "Security"]: its machine clients and the
 * clients its members authorized, listed and deleted (commands/oauthClients.ts). Deleting a machine client ends it
 * and every token it was issued; deleting a client of people ends every grant of this organization's members.
 */
import { deleteOAuthClient, listOAuthClients } from '../../commands/oauthClients';
import { input, type RouteSpec } from '../route';
import { idParams, record } from '../schemas';
import { clientSchema } from './oauthClients.schema';

const tags = ['OAuth'];

/** @returns the route declarations. */
export function oauthClientRoutes(): RouteSpec[] {
  return [
    {
      method: 'get',
      path: '/oauth-clients',
      summary:
        "The organization's OAuth clients of the MCP endpoint: its machine clients and those its members authorized",
      tags,
      auth: 'service',
      scope: 'mcp',
      responses: { 200: record({ clients: { type: 'array', items: clientSchema } }) },
      handler: async (ctx) => {
        ctx.body = { clients: await listOAuthClients(ctx.state.auth.organizationId) };
      },
    },
    {
      method: 'delete',
      path: '/oauth-clients/:id',
      summary: 'Delete an OAuth client of the organization (a client of people: revoke what its members granted it)',
      tags,
      auth: 'service',
      scope: 'mcp',
      params: idParams,
      responses: { 200: record({ id: { type: 'string' }, deleted: { const: true } }) },
      handler: async (ctx) => {
        const { id } = input<unknown, unknown, { id: string }>(ctx).params;
        await deleteOAuthClient(ctx.state.auth.organizationId, id);
        ctx.body = { id, deleted: true };
      },
    },
  ];
}
