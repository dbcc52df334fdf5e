/**
 * v1 profile: the caller's user and organization; PATCH changes the user's own display fields.
 */
import { NotFoundError } from '../../lib/errors';
import { Membership, Organization, User, type OrganizationDoc, type UserDoc } from '../../models';
import { presentOrganization } from '../../presenters/organization';
import { presentUser } from '../../presenters/user';
import type { AuthContext } from '../../commands/tokens';
import { route, type RouteSpec } from '../route';
import { profileResponse, profileUpdateBody } from './profile.schema';

const tags = ['Profile'];

async function profile(auth: AuthContext): Promise<Record<string, unknown>> {
  const { organizationId, userId, role } = auth;
  const [user, org, members] = await Promise.all([
    User.findById(userId).lean<UserDoc>(),
    Organization.findById(organizationId).lean<OrganizationDoc>(),
    Membership.find({ organizationId }).select({ userId: 1 }).lean(),
  ]);
  if (!user || !org) throw new NotFoundError('Profile not found');
  return {
    success: true,
    user: presentUser(user),
    organization: presentOrganization(
      org,
      members.map((m) => m.userId)
    ),
    role,
  };
}

/** @returns the route declarations. */
export function profileRoutes(): RouteSpec[] {
  return [
    route({
      method: 'get',
      path: '/profile',
      summary: "The caller's user, organization and role",
      tags,
      auth: 'v1',
      responses: { 200: profileResponse },
      handler: async (ctx) => {
        ctx.body = await profile(ctx.state.auth);
      },
    }),
    route({
      method: 'patch',
      path: '/profile',
      summary: "Update the caller's display name or avatar",
      tags,
      auth: 'v1',
      body: profileUpdateBody,
      responses: { 200: profileResponse },
      handler: async (ctx, { body: changes }) => {
        if (Object.keys(changes).length > 0) await User.updateOne({ _id: ctx.state.auth.userId }, { $set: changes });
        ctx.body = await profile(ctx.state.auth);
      },
    }),
  ];
}
