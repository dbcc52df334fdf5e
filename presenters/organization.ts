/** Organization → public JSON (the spec's Organization record). */
import type { OrganizationDoc } from '../models';

/**
 * @param org the stored organization.
 * @param members user ids of its members.
 * @returns the public record.
 */
export function presentOrganization(org: OrganizationDoc, members: string[]): Record<string, unknown> {
  return {
    id: org._id,
    name: org.name,
    ...(org.logoUrl ? { logoUrl: org.logoUrl } : {}),
    ownerId: org.ownerId,
    members,
    subscription: { tier: org.subscription?.tier ?? 'free', status: org.subscription?.status ?? 'active' },
    createdAt: org.createdAt.toISOString(),
    updatedAt: org.updatedAt.toISOString(),
  };
}
