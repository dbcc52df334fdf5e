/**
 * Creates an organization with its first user (owner) and two tokens: a v1 `td_` token and a `*` service token.
 * Used by the admin CLI and by test factories.
 */
import { Membership, Organization, User } from '../models';
import { createToken } from './tokens';

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
