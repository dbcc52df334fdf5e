/** The Settings page's pure logic: token expiry choices and states, and the webhook form's event types. */

const DAY = 86_400_000;

/** The expiry choices of a new token (days; `never` for none). */
export const EXPIRY_CHOICES = [
  { value: '7', label: '7 days' },
  { value: '30', label: '30 days' },
  { value: '90', label: '90 days' },
  { value: '365', label: '1 year' },
  { value: 'never', label: 'Never' },
];

/**
 * @param choice one of EXPIRY_CHOICES' values.
 * @param now the current time (ms).
 * @returns the token's `expiresAt` (ISO), or undefined for a token that does not expire.
 */
export function expiryFrom(choice: string, now: number): string | undefined {
  const days = Number(choice);
  if (choice === 'never' || !Number.isInteger(days) || days <= 0) return undefined;
  return new Date(now + days * DAY).toISOString();
}

/**
 * @param key a token's record (GET /api/v1/keys).
 * @param now the current time (ms).
 * @returns revoked, expired or active.
 */
export function tokenState(
  key: { revokedAt?: string | null; expiresAt?: string | null },
  now: number
): 'active' | 'revoked' | 'expired' {
  if (key.revokedAt) return 'revoked';
  if (key.expiresAt && Date.parse(key.expiresAt) <= now) return 'expired';
  return 'active';
}

/**
 * @param selected the event types ticked in the form.
 * @param all every event type.
 * @returns what PUT /api/messaging-integration takes: null (every type, also those added later) when all or none
 * are ticked, else the ticked ones in the list's order.
 */
export function eventTypesBody<T extends string>(selected: readonly T[], all: readonly T[]): T[] | null {
  if (selected.length === 0 || all.every((t) => selected.includes(t))) return null;
  return all.filter((t) => selected.includes(t));
}
