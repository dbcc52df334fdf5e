/** Access token record → public JSON (never the token or its hash). */
import type { ApiTokenDoc } from '../models';
import { iso } from './time';

/**
 * @param token the stored token.
 * @returns the public record.
 */
export function presentApiKey(token: ApiTokenDoc): Record<string, unknown> {
  return {
    id: token._id,
    name: token.name ?? '',
    hint: token.hint,
    createdAt: iso(token.createdAt),
    expiresAt: iso(token.expiresAt),
    lastUsedAt: iso(token.lastUsedAt),
    revokedAt: iso(token.revokedAt),
  };
}
