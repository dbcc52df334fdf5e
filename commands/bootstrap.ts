/**
 * Creates an organization with its first user (owner) and two tokens: a v1 `td_` token and a `*` service token;
 * adds members to an organization. Used by the admin CLI and by test factories.
 */
import { NotFoundError } from '../lib/errors';
import { Membership, Organization, User, type MemberRole } from '../models';
import { authChanged, createToken } from './tokens';

export interface BootstrapResult {
  organizationId: string;
  userId: string;
  apiToken: string;
  serviceToken: string;
}

/**
 * @param input organization name and owner email (the user is reused when the email exists).
 * @returns ids and the two clear tokens.
 */
export async function bootstrapOrganization(input: {
  org: string;
  email: string;
  name?: string;
}): Promise<BootstrapResult> {
  const email = input.email.trim().toLowerCase();
  const user =
    (await User.findOne({ email })) ?? (await User.create({ email, name: input.name ?? email.split('@')[0] }));
  const org = await Organization.create({ name: input.org, ownerId: user._id });
  await Membership.create({ organizationId: org._id, userId: user._id, role: 'owner' });
  const base = { organizationId: org._id, userId: user._id };
  const api = await createToken({ ...base, kind: 'v1', name: 'bootstrap' });
  const service = await createToken({ ...base, kind: 'service', name: 'bootstrap', scopes: ['*'] });
  return { organizationId: org._id, userId: user._id, apiToken: api.token, serviceToken: service.token };
}

/**
 * Adds a user (found by email, else created) to an organization with a role; a user already a member keeps the
 * membership and gets the role given (idempotent). Tokens the user had there are unaffected.
 * @param input the organization, the user's email and name, the role.
 * @returns the ids, the role and whether the membership is new.
 * @throws NotFoundError when the organization does not exist.
 */
export async function addMember(input: {
  organizationId: string;
  email: string;
  name?: string;
  role: MemberRole;
}): Promise<{ organizationId: string; userId: string; role: MemberRole; created: boolean }> {
  if (!(await Organization.exists({ _id: input.organizationId }))) throw new NotFoundError('Organization not found');
  const email = input.email.trim().toLowerCase();
  const user =
    (await User.findOne({ email })) ?? (await User.create({ email, name: input.name ?? email.split('@')[0] }));
  const existing = await Membership.findOne({ organizationId: input.organizationId, userId: user._id }).lean();
  if (existing) {
    if (existing.role !== input.role) await Membership.updateOne({ _id: existing._id }, { $set: { role: input.role } });
  } else {
    await Membership.create({ organizationId: input.organizationId, userId: user._id, role: input.role });
  }
  await authChanged(input.organizationId);
  return { organizationId: input.organizationId, userId: user._id, role: input.role, created: !existing };
}
