/** User → public JSON. */
import type { UserDoc } from '../models';

/**
 * @param user the stored user.
 * @returns the public record.
 */
export function presentUser(user: UserDoc): Record<string, unknown> {
  return {
    id: user._id,
    email: user.email,
    name: user.name ?? null,
    avatarUrl: user.avatarUrl ?? null,
    createdAt: user.createdAt.toISOString(),
    updatedAt: user.updatedAt.toISOString(),
  };
}
