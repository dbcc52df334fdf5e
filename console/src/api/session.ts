/**
 * The console session (the service's /api/session): sign in with a personal access token, which the server turns
 * into an HttpOnly cookie; the page keeps nothing of the token once the request is sent.
 */
import { errorMessage } from '../lib/errors';

export interface Session {
  user: { id: string; email: string; name: string };
  organization: { id: string; name: string };
  expiresAt: string;
  idleExpiresAt: string;
}

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

async function body(res: Response): Promise<unknown> {
  try {
    return await res.json();
  } catch {
    return undefined;
  }
}

/** @returns the current session, or null when signed out. */
export async function readSession(): Promise<Session | null> {
  const res = await fetch('/api/session', { headers: { accept: 'application/json' } });
  if (res.status === 401) return null;
  if (!res.ok) throw new Error(errorMessage(await body(res), res.status));
  return (await res.json()) as Session;
}

/**
 * @param token a personal access token.
 * @returns the new session.
 * @throws SignInError with a sentence for the page.
 */
export async function signIn(token: string): Promise<Session> {
  const res = await fetch('/api/session', {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json' },
    body: JSON.stringify({ token }),
  });
  if (res.ok) return (await res.json()) as Session;
  if (res.status === 401) {
    throw new SignInError(401, 'That access token was not accepted: check it, or create a new one.');
  }
  if (res.status === 429) {
    const after = Number(res.headers.get('retry-after'));
    const wait = Number.isFinite(after) && after > 0 ? ` in ${after} s` : ' later';
    throw new SignInError(429, `Too many sign-in attempts: try again${wait}.`);
  }
  throw new SignInError(res.status, errorMessage(await body(res), res.status));
}

/** Ends the session (the server forgets it and clears the cookie). */
export async function signOut(): Promise<void> {
  const res = await fetch('/api/session', { method: 'DELETE' });
  if (!res.ok && res.status !== 401) throw new Error(errorMessage(await body(res), res.status));
}
