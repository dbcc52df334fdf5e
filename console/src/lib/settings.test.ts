/** The Settings page's pure logic (lib/settings.ts). */
import { eventTypesBody, EXPIRY_CHOICES, expiryFrom, tokenState } from './settings';

const now = Date.parse('2026-12-02T03:00:00.000Z');

it('turns an expiry choice into expiresAt, none for never', () => {
  expect(expiryFrom('30', now)).toBe('2027-01-01T03:00:00.000Z');
  expect(expiryFrom('7', now)).toBe('2026-12-09T03:00:00.000Z');
  expect(expiryFrom('never', now)).toBeUndefined();
  expect(expiryFrom('nonsense', now)).toBeUndefined();
  expect(EXPIRY_CHOICES.map((c) => expiryFrom(c.value, now) !== undefined)).toEqual([true, true, true, true, false]);
});

it('says whether a token is active, expired or revoked', () => {
  expect(tokenState({ revokedAt: null, expiresAt: null }, now)).toBe('active');
  expect(tokenState({ revokedAt: null, expiresAt: '2026-12-03T00:00:00.000Z' }, now)).toBe('active');
  expect(tokenState({ revokedAt: null, expiresAt: '2026-12-01T00:00:00.000Z' }, now)).toBe('expired');
  expect(tokenState({ revokedAt: '2026-12-01T00:00:00.000Z', expiresAt: '2026-12-01T00:00:00.000Z' }, now)).toBe(
    'revoked'
  );
});

it('sends null for every event type, else the ticked ones in order', () => {
  const all = ['a', 'b', 'c'] as const;
  expect(eventTypesBody([], all)).toBeNull();
  expect(eventTypesBody(['c', 'b', 'a'], all)).toBeNull();
  expect(eventTypesBody(['c', 'a'], all)).toEqual(['a', 'c']);
});
