/**
 * Factories for test data, built through the same commands the service uses.
 */
import { randomBytes } from 'node:crypto';
import { bootstrapOrganization, type BootstrapResult } from '../../commands/bootstrap';
import { createToken } from '../../commands/tokens';
import { Membership, User } from '../../models';

const rand = (): string => randomBytes(4).toString('hex');

/**
 * @param overrides organization name.
 * @returns a new organization with its owner and two tokens (v1 `td_` and `*` service).
 */
export async function buildOrg(overrides: { org?: string } = {}): Promise<BootstrapResult> {
  return bootstrapOrganization({ org: overrides.org ?? `Org ${rand()}`, email: `owner-${rand()}@example.com` });
}

/**
 * Adds a member to an organization.
 * @param organizationId the organization.
 * @param role member role.
 * @returns the user id, a v1 token and a `*` service token.
 */
export async function buildMember(
  organizationId: string,
  role: 'admin' | 'member' = 'member'
): Promise<{ userId: string; apiToken: string; serviceToken: string }> {
  const user = await User.create({ email: `member-${rand()}@example.com`, name: 'Member' });
  await Membership.create({ organizationId, userId: user._id, role });
  const { token } = await createToken({ organizationId, userId: user._id, kind: 'v1' });
  const service = await createToken({ organizationId, userId: user._id, kind: 'service' });
  return { userId: user._id, apiToken: token, serviceToken: service.token };
}

/**
 * @param org the organization (owner is used).
 * @param scopes service token scopes.
 * @returns a clear service token.
 */
export async function buildServiceToken(org: BootstrapResult, scopes: string[]): Promise<string> {
  const { token } = await createToken({
    organizationId: org.organizationId,
    userId: org.userId,
    kind: 'service',
    scopes,
  });
  return token;
}

/** @returns an `Authorization` header value. */
export function bearer(token: string): string {
  return `Bearer ${token}`;
}
