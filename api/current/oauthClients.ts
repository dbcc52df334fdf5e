/**
 * The organization's OAuth clients of the MCP endpoint [docs/decisions.md "Security"]: its machine clients and the
 * clients its members authorized, listed and deleted (commands/oauthClients.ts). Deleting a machine client ends it
 * and every token it was issued; deleting a client of people ends every grant of this organization's members.
 */
import { deleteOAuthClient, listOAuthClients } from '../../commands/oauthClients';
import type { Schema } from '../../lib/ajv';
import { input, type RouteSpec } from '../route';
import { idParams, nullableTimestamp, record, timestamp } from '../schemas';

const tags = ['OAuth'];

const clientSchema: Schema = record({
  id: { type: 'string' },
  name: { type: 'string' },
  kind: {
    type: 'string',
    enum: ['machine', 'person'],
    description: '`machine`: registered with a service token (client credentials); `person`: authorized by members',
  },
  grant_types: { type: 'array', items: { type: 'string' } },
  redirect_uris: { type: 'array', items: { type: 'string' } },
  created_at: timestamp,
  expires_at: { ...nullableTimestamp, description: 'When the client expires unless it is used again' },
});

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
