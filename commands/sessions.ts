/**
 * Console sessions [docs/decisions.md "Console sessions"]: a person signs in with a personal access token (`td_`),
 * or through the identity provider ("Sign in with SSO", api/current/sso.ts), and gets a random secret (the cookie's
 * value); the request then acts as the token's (or the identity's) user on both surfaces. A session of SSO has no
 * token: it is alive while its user is a member of its organization (and within its lifetimes).
 *
 * - Only the secret's SHA-256 is stored (the session's `_id`), and of the token only its record's id and hash: the
 *   clear token is never stored nor sent back.
 * - A session is alive while: its absolute lifetime (SESSION_MAX_AGE) has not passed, it was used within the idle
 *   timeout (SESSION_IDLE_TIMEOUT), and its token still resolves (not revoked, not expired, its user still a member),
 *   through the token cache that revocation and membership changes invalidate (commands/tokens.ts).
 * - `lastSeenAt` is written at most once per {@link lastSeenResolutionMs}, so a session is not a write per request.
 */
import { randomBytes } from 'node:crypto';
import { expiryFields } from '../lib/expiry';
import { InvalidTokenError, RateLimitedError } from '../lib/errors';
import { sha256Hex, TOKEN_PREFIX } from '../lib/crypto';
import { ConsoleSession, Organization, User, type ConsoleSessionDoc } from '../models';
import { countRequest } from './rateLimits';
import { memberContext, resolveToken, resolveTokenHash, type AuthContext } from './tokens';

/** The lifetime settings (lib/config.ts `session`). */
export interface SessionSettings {
  idleMs: number;
  maxAgeMs: number;
}

/** The sign-in limits (lib/config.ts `session`). */
export interface SignInLimits {
  signInPerAddress: number;
  signInPerToken: number;
  signInWindowSeconds: number;
}

/** A live session and the caller it stands for. */
export interface LiveSession {
  session: ConsoleSessionDoc;
  auth: AuthContext;
  /** When the session ends if unused: the last recorded request + the idle timeout, at most its absolute end. */
  idleExpiresAt: Date;
}

/** What the console shows of a session (`GET /api/session`). */
export interface SessionView {
  user: { id: string; email: string; name: string | null };
  organization: { id: string; name: string };
  expiresAt: Date;
  idleExpiresAt: Date;
}

/**
 * How often `lastSeenAt` is written: once a minute, or a tenth of the idle timeout when that is shorter (tests), so
 * the idle timeout is honoured to within that much.
 * @param settings the lifetime settings.
 * @returns milliseconds.
 */
export function lastSeenResolutionMs(settings: SessionSettings): number {
  return Math.min(60_000, Math.floor(settings.idleMs / 10));
}

function idleEnd(session: ConsoleSessionDoc, settings: SessionSettings): Date {
  return new Date(Math.min(session.lastSeenAt.getTime() + settings.idleMs, session.expiresAt.getTime()));
}

/**
 * Counts a sign-in attempt per client address and per token hint (the token's first 7 characters, as token lists
 * show it), in fixed windows shared by every api process (commands/rateLimits.ts).
 * @param address the client's address.
 * @param token the token as presented.
 * @param limits the limits.
 * @throws RateLimitedError (429, Retry-After) past either limit.
 */
export async function countSignIn(address: string, token: string, limits: SignInLimits): Promise<void> {
  const now = Date.now();
  const window = limits.signInWindowSeconds;
  const [byAddress, byToken] = await Promise.all([
    countRequest(`session-signin:address:${address}`, window, now),
    countRequest(`session-signin:token:${sha256Hex(token.slice(0, TOKEN_PREFIX.v1.length + 4))}`, window, now),
  ]);
  const over = [
    byAddress.count > limits.signInPerAddress ? byAddress.resetAt : 0,
    byToken.count > limits.signInPerToken ? byToken.resetAt : 0,
  ];
  const resetAt = Math.max(...over);
  if (resetAt > 0) throw new RateLimitedError(Math.max(1, Math.ceil((resetAt - now) / 1000)));
}

/**
 * Counts the start of an SSO sign-in against the same per-address budget as token sign-ins.
 * @param address the client's address.
 * @param limits the limits.
 * @throws RateLimitedError (429, Retry-After) past the limit.
 */
export async function countSsoStart(address: string, limits: SignInLimits): Promise<void> {
  const now = Date.now();
  const { count, resetAt } = await countRequest(`session-signin:address:${address}`, limits.signInWindowSeconds, now);
  if (count > limits.signInPerAddress) throw new RateLimitedError(Math.max(1, Math.ceil((resetAt - now) / 1000)));
}

/**
 * Signs a person in with a personal access token.
 * @param token the clear `td_` token.
 * @param settings the lifetime settings.
 * @returns the cookie's secret (give it to the client only) and the live session.
 * @throws InvalidTokenError (401) for anything but a valid `td_` token of a member.
 */
export async function createSession(
  token: string,
  settings: SessionSettings
): Promise<{ secret: string } & LiveSession> {
  if (!token.startsWith(TOKEN_PREFIX.v1)) throw new InvalidTokenError("Token must start with 'td_'");
  const auth = await resolveToken(token, 'v1');
  if (auth === 'expired') throw new InvalidTokenError('Token expired');
  if (auth === 'invalid') throw new InvalidTokenError();
  return openSession(auth, { tokenHash: sha256Hex(token) }, settings);
}

/**
 * Opens a session for a person the identity provider signed in (api/current/sso.ts).
 * @param auth the member the ID token maps to (commands/identity.ts).
 * @param identity the token's issuer and subject.
 * @param settings the lifetime settings.
 * @returns the cookie's secret and the live session.
 */
export function createSsoSession(
  auth: AuthContext,
  identity: { issuer: string; subject: string },
  settings: SessionSettings
): Promise<{ secret: string } & LiveSession> {
  return openSession(auth, { issuer: identity.issuer, subject: identity.subject }, settings);
}

async function openSession(
  auth: AuthContext,
  credential: { tokenHash: string } | { issuer: string; subject: string },
  settings: SessionSettings
): Promise<{ secret: string } & LiveSession> {
  const secret = randomBytes(32).toString('base64url');
  const now = new Date();
  const session = (
    await ConsoleSession.create({
      _id: sha256Hex(secret),
      organizationId: auth.organizationId,
      userId: auth.userId,
      tokenId: auth.tokenId,
      ...credential,
      createdAt: now,
      lastSeenAt: now,
      ...expiryFields(new Date(now.getTime() + settings.maxAgeMs)),
    })
  ).toObject() as ConsoleSessionDoc;
  return { secret, session, auth, idleExpiresAt: idleEnd(session, settings) };
}

/**
 * The live session a cookie's secret names, and its caller; records the request as the session's last use (at
 * most once per {@link lastSeenResolutionMs}).
 * @param secret the cookie's value.
 * @param settings the lifetime settings.
 * @returns the session, or null when there is none alive (unknown, ended, idle, past its lifetime, token revoked
 *   or expired, user no longer a member).
 */
export async function resolveSession(secret: string, settings: SessionSettings): Promise<LiveSession | null> {
  if (secret.length === 0 || secret.length > 200) return null;
  const session = await ConsoleSession.findById(sha256Hex(secret)).lean<ConsoleSessionDoc>();
  if (!session) return null;
  const now = Date.now();
  if (session.expiresAt.getTime() <= now || idleEnd(session, settings).getTime() <= now) return null;
  const auth = session.tokenHash
    ? await resolveTokenHash(session.tokenHash, 'v1')
    : ((await memberContext(session.organizationId, session.userId, session.tokenId, [], 'v1')) ?? 'invalid');
  if (typeof auth === 'string' || auth.organizationId !== session.organizationId || auth.userId !== session.userId)
    return null;
  if (now - session.lastSeenAt.getTime() >= lastSeenResolutionMs(settings)) {
    session.lastSeenAt = new Date(now);
    // Best effort: a failed bookkeeping write must not fail the request (the session only ends sooner).
    await ConsoleSession.updateOne({ _id: session._id }, { $set: { lastSeenAt: session.lastSeenAt } }).catch(
      () => undefined
    );
  }
  return { session, auth, idleExpiresAt: idleEnd(session, settings) };
}

/**
 * Ends a session (sign out); nothing happens when there is none.
 * @param secret the cookie's value.
 */
export async function endSession(secret: string): Promise<void> {
  if (secret.length === 0 || secret.length > 200) return;
  await ConsoleSession.deleteOne({ _id: sha256Hex(secret) });
}

/**
 * @param live a live session.
 * @returns what the console shows of it: the user, the organization and when the session ends.
 */
export async function viewSession(live: LiveSession): Promise<SessionView> {
  const [user, org] = await Promise.all([
    User.findById(live.session.userId).lean(),
    Organization.findById(live.session.organizationId).lean(),
  ]);
  if (!user || !org) throw new InvalidTokenError('Session expired or signed out');
  return {
    user: { id: user._id, email: user.email, name: user.name ?? null },
    organization: { id: org._id, name: org.name },
    expiresAt: live.session.expiresAt,
    idleExpiresAt: live.idleExpiresAt,
  };
}
