/**
 * The console's "Sign in with SSO" (docs/identity.md; docs/decisions.md "Identity providers (issue 43)"): the
 * authorization code flow of OpenID Connect with PKCE (S256), `state` and `nonce`, against the issuer of
 * OIDC_CONSOLE_ISSUER, as a client of it (OIDC_CONSOLE_CLIENT_ID, with OIDC_CONSOLE_CLIENT_SECRET when set, else a
 * public client). {@link startSso} records the login under way and gives the provider's authorization URL;
 * {@link finishSso} uses that record once, exchanges the code, verifies the ID token (signature, `iss`, `aud`, `exp`,
 * `nonce`) and maps it to a member (commands/identity.ts). The session it ends in is the one a token sign-in opens
 * (commands/sessions.ts `createSsoSession`).
 */
import { createHash, randomBytes } from 'node:crypto';
import type { OidcConfig } from '../lib/config';
import { sha256Hex } from '../lib/crypto';
import { expiryFields } from '../lib/expiry';
import type { IdentityProviders, IdTokenClaims } from '../lib/oidc';
import { SsoLogin, type SsoLoginDoc } from '../models';
import { identityContext } from './identity';
import type { AuthContext } from './tokens';

/** How long a person has at the identity provider before the login under way is forgotten. */
export const SSO_LOGIN_TTL_MS = 10 * 60 * 1000;
/** The console's callback on this service (registered at the provider as the client's redirect URI). */
export const SSO_CALLBACK_PATH = '/api/session/sso/callback';

/** The console's client at its identity provider. */
export type ConsoleSso = NonNullable<OidcConfig['console']>;

/**
 * Why an SSO sign-in failed, as the sign-in page says it (`/sign-in?sso_error=<reason>`): `denied` (the provider
 * answered an error: the person cancelled, or the client is not allowed), `expired` (no login under way for this
 * browser: too old, used, or started elsewhere), `unmapped` (no member matches the identity), `invalid` (the code
 * exchange or the ID token failed its checks), `unavailable` (the provider cannot be reached).
 */
export type SsoFailure = 'denied' | 'expired' | 'unmapped' | 'invalid' | 'unavailable';

/** Thrown by {@link finishSso}. */
export class SsoError extends Error {
  constructor(
    readonly reason: SsoFailure,
    detail: string
  ) {
    super(detail);
    this.name = 'SsoError';
  }
}

const base64url = (b: Buffer): string => b.toString('base64url');

/**
 * @param next a console path asked for (`?next=`).
 * @returns it when it is a path of this site (`/…`, not `//…`), else `/`.
 */
export function safeNext(next: string | undefined): string {
  if (!next || !next.startsWith('/') || next.startsWith('//') || next.startsWith('/\\') || next.length > 2000)
    return '/';
  return next;
}

/**
 * Starts a sign-in: records the state, nonce and PKCE verifier, and gives the provider's authorization URL.
 * @param providers the identity providers.
 * @param sso the console's client.
 * @param appUrl APP_URL (the redirect URI's base).
 * @param next the console path to land on.
 * @returns the URL to send the browser to, and the state (the browser keeps it in a cookie).
 * @throws SsoError `unavailable` when the provider's discovery document cannot be read.
 */
export async function startSso(
  providers: IdentityProviders,
  sso: ConsoleSso,
  appUrl: string,
  next: string | undefined
): Promise<{ url: string; state: string }> {
  const metadata = await providers.discover(sso.issuer).catch((err: unknown) => {
    throw new SsoError('unavailable', (err as Error).message);
  });
  if (!metadata.authorization_endpoint || !metadata.token_endpoint)
    throw new SsoError('unavailable', `${sso.issuer} publishes no authorization or token endpoint`);
  const state = base64url(randomBytes(32));
  const nonce = base64url(randomBytes(32));
  const codeVerifier = base64url(randomBytes(32));
  await SsoLogin.create({
    _id: sha256Hex(state),
    issuer: sso.issuer,
    codeVerifier,
    nonce,
    next: safeNext(next),
    ...expiryFields(new Date(Date.now() + SSO_LOGIN_TTL_MS)),
  });
  const url = new URL(metadata.authorization_endpoint);
  url.search = new URLSearchParams({
    response_type: 'code',
    client_id: sso.clientId,
    redirect_uri: `${appUrl}${SSO_CALLBACK_PATH}`,
    scope: 'openid email profile',
    state,
    nonce,
    code_challenge: base64url(createHash('sha256').update(codeVerifier).digest()),
    code_challenge_method: 'S256',
  }).toString();
  return { url: url.toString(), state };
}

/** What the provider sent back to the callback, and the state the browser's cookie holds. */
export interface SsoCallback {
  code?: string;
  state?: string;
  error?: string;
  iss?: string;
  cookieState?: string;
}

/**
 * Finishes a sign-in: the login under way is used once, the code exchanged, the ID token verified and mapped.
 * @param providers the identity providers.
 * @param sso the console's client.
 * @param appUrl APP_URL.
 * @param callback the callback's parameters and the browser's state cookie.
 * @returns the member, the token's claims and where to land.
 * @throws SsoError saying why.
 */
export async function finishSso(
  providers: IdentityProviders,
  sso: ConsoleSso,
  appUrl: string,
  callback: SsoCallback
): Promise<{ auth: AuthContext; claims: IdTokenClaims; next: string }> {
  const { state, cookieState } = callback;
  // The state must be the one this browser was given (its cookie): a code started elsewhere signs no one in here.
  if (!state || !cookieState || state !== cookieState)
    throw new SsoError('expired', 'state missing or not this browser’s');
  const login = await SsoLogin.findOneAndDelete({ _id: sha256Hex(state) }).lean<SsoLoginDoc>();
  if (!login || login.expiresAt.getTime() <= Date.now() || login.issuer !== sso.issuer)
    throw new SsoError('expired', 'no login under way for this state');
  if (callback.error) throw new SsoError('denied', `the provider answered ${callback.error}`);
  // RFC 9207: when the provider names itself, it must be the one the login went to.
  if (callback.iss !== undefined && callback.iss !== sso.issuer)
    throw new SsoError('invalid', `the response names the issuer ${callback.iss}`);
  if (!callback.code) throw new SsoError('invalid', 'no code');
  const metadata = await providers.discover(sso.issuer).catch((err: unknown) => {
    throw new SsoError('unavailable', (err as Error).message);
  });
  const idToken = await exchangeCode(metadata.token_endpoint!, sso, appUrl, callback.code, login.codeVerifier);
  const claims = await providers.verify(idToken, { nonce: login.nonce, issuer: sso.issuer, audience: sso.clientId });
  if (claims === 'unavailable') throw new SsoError('unavailable', 'the provider’s keys cannot be read');
  if (typeof claims === 'string') throw new SsoError('invalid', `ID token refused: ${claims}`);
  const auth = await identityContext(claims);
  if (!auth) throw new SsoError('unmapped', 'no member matches the identity');
  return { auth, claims, next: login.next };
}

async function exchangeCode(
  tokenEndpoint: string,
  sso: ConsoleSso,
  appUrl: string,
  code: string,
  codeVerifier: string
): Promise<string> {
  const form = new URLSearchParams({
    grant_type: 'authorization_code',
    code,
    redirect_uri: `${appUrl}${SSO_CALLBACK_PATH}`,
    code_verifier: codeVerifier,
  });
  const headers: Record<string, string> = {
    'content-type': 'application/x-www-form-urlencoded',
    accept: 'application/json',
  };
  if (sso.clientSecret) {
    // RFC 6749 §2.3.1: both parts form-encoded before Basic.
    const pair = `${encodeURIComponent(sso.clientId)}:${encodeURIComponent(sso.clientSecret)}`;
    headers.authorization = `Basic ${Buffer.from(pair).toString('base64')}`;
  } else form.set('client_id', sso.clientId);
  let res: Response;
  try {
    res = await fetch(tokenEndpoint, {
      method: 'POST',
      headers,
      body: form.toString(),
      redirect: 'error',
      signal: AbortSignal.timeout(10_000),
    });
  } catch (err) {
    throw new SsoError('unavailable', `token endpoint: ${(err as Error).message}`);
  }
  const body = (await res.json().catch(() => ({}))) as { id_token?: unknown; error?: unknown };
  if (!res.ok || typeof body.id_token !== 'string')
    throw new SsoError(
      'invalid',
      `token endpoint answered ${res.status} ${String(body.error ?? 'without an ID token')}`
    );
  return body.id_token;
}
