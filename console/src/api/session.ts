/**
 * The console session (the service's /api/session, through the typed client): sign in with a personal access
 * token, which the server turns into an HttpOnly cookie; the page keeps nothing of the token once the request is sent.
 */
import { errorMessage } from '../lib/errors';
import { api } from './client';
import type { paths } from './schema';

export type Session = paths['/api/session']['get']['responses'][200]['content']['application/json'];

/** Why a sign-in failed, as the page says it. */
export class SignInError extends Error {
  constructor(
    readonly status: number,
    message: string
  ) {
    super(message);
    this.name = 'SignInError';
  }
}

/** @returns the current session, or null when signed out. */
export async function readSession(): Promise<Session | null> {
  const { data, error, response } = await api.GET('/api/session');
  if (response.status === 401) return null;
  if (!data) throw new Error(errorMessage(error, response.status));
  return data;
}

/**
 * @param token a personal access token.
 * @returns the new session.
 * @throws SignInError with a sentence for the page.
 */
export async function signIn(token: string): Promise<Session> {
  const { data, error, response } = await api.POST('/api/session', { body: { token } });
  if (data) return data;
  if (response.status === 401) {
    throw new SignInError(401, 'That access token was not accepted: check it, or create a new one.');
  }
  if (response.status === 429) {
    const after = Number(response.headers.get('retry-after'));
    const wait = Number.isFinite(after) && after > 0 ? ` in ${after} s` : ' later';
    throw new SignInError(429, `Too many sign-in attempts: try again${wait}.`);
  }
  throw new SignInError(response.status, errorMessage(error, response.status));
}

export type SsoOffer = paths['/api/session/sso']['get']['responses'][200]['content']['application/json'];

/** @returns whether the service offers "Sign in with SSO" (an identity provider configured for the console). */
export async function readSsoOffer(): Promise<SsoOffer> {
  const { data, error, response } = await api.GET('/api/session/sso');
  if (!data) throw new Error(errorMessage(error, response.status));
  return data;
}

/** Why an SSO sign-in came back refused (`/sign-in?sso_error=<reason>`), as the page says it. */
export function ssoErrorMessage(reason: string): string {
  switch (reason) {
    case 'denied':
      return 'The identity provider did not sign you in (cancelled or not allowed).';
    case 'expired':
      return 'That sign-in took too long or was started in another window: try again.';
    case 'unmapped':
      return 'Your identity is not linked to a member of an organization here: ask an administrator.';
    case 'unavailable':
      return 'The identity provider cannot be reached right now: try again later.';
    default:
      return 'The identity provider’s answer was refused: try again, or use an access token.';
  }
}

/** Ends the session (the server forgets it and clears the cookie). */
export async function signOut(): Promise<void> {
  const { error, response } = await api.DELETE('/api/session');
  if (!response.ok && response.status !== 401) throw new Error(errorMessage(error, response.status));
}
