/**
 * v1 profile: the caller's user and organization.
 */
import Router from '@koa/router';
import { NotFoundError } from '../../lib/errors';
import { Membership, Organization, User, type OrganizationDoc, type UserDoc } from '../../models';
import { presentOrganization } from '../../presenters/organization';
import { presentUser } from '../../presenters/user';
import type { AppState } from '../context';

/** @returns the router (mounted under /api/v1 behind v1 authentication). */
export function profileRouter(): Router<AppState> {
  const router = new Router<AppState>();
  router.get('/profile', async (ctx) => {
    const { organizationId, userId, role } = ctx.state.auth;
    const [user, org, members] = await Promise.all([
      User.findById(userId).lean<UserDoc>(),
      Organization.findById(organizationId).lean<OrganizationDoc>(),
      Membership.find({ organizationId }).select({ userId: 1 }).lean(),
    ]);
    if (!user || !org) throw new NotFoundError('Profile not found');
    ctx.body = {
      success: true,
      user: presentUser(user),
      organization: presentOrganization(
        org,
        members.map((m) => m.userId)
      ),
      role,
    };
  });
  return router;
}
