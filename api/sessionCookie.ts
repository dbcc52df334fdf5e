/**
 * The console's session cookie and its CSRF rule, shared by the authentication of both surfaces
 * (api/middlewares/auth.ts) and the session routes (api/current/session.ts) [docs/decisions.md "Console sessions"].
 *
 * - Name: `__Host-aas_session` when APP_URL is https (the `__Host-` prefix makes the browser refuse it unless it is
 *   `Secure`, has `Path=/` and no `Domain`, so no other host and no plain-http page can set or shadow it), else
 *   `aas_session`. Always `HttpOnly` (scripts cannot read it), `SameSite=Strict`, `Path=/`.
 * - CSRF: a request authenticated by the cookie with a method other than GET, HEAD or OPTIONS must carry an `Origin`
 *   header equal to APP_URL's origin or to the request's own origin (scheme, Host header); anything else is 403.
 */
import type { Config } from '../lib/config';
import type { SessionSettings } from '../commands/sessions';
import type { AppContext } from './context';

/** The cookie's settings, derived from the configuration once. */
export interface CookieSessions extends SessionSettings {
  cookieName: string;
  secure: boolean;
  /** APP_URL's origin (`scheme://host[:port]`). */
  appOrigin: string;
}

/**
 * @param config APP_URL and the session settings.
 * @returns the cookie's settings.
 */
export function cookieSessions(config: Readonly<Config>): CookieSessions {
  const url = new URL(config.appUrl);
  const secure = url.protocol === 'https:';
  return {
    cookieName: sessionCookieName(config.appUrl),
    secure,
    appOrigin: url.origin,
    idleMs: config.session.idleMs,
    maxAgeMs: config.session.maxAgeMs,
  };
}

/**
 * @param appUrl APP_URL.
 * @returns the cookie's name: `__Host-aas_session` when APP_URL is https, else `aas_session`.
 */
export function sessionCookieName(appUrl: string): string {
  return new URL(appUrl).protocol === 'https:' ? '__Host-aas_session' : 'aas_session';
}

/**
 * @param ctx the request.
 * @param sessions the cookie's settings.
 * @returns the session secret the request's cookie carries, or undefined.
 */
export function sessionSecret(ctx: AppContext, sessions: CookieSessions): string | undefined {
  const value = ctx.cookies.get(sessions.cookieName);
  return value === undefined || value === '' ? undefined : value;
}

function attributes(sessions: CookieSessions): string {
  return `Path=/; HttpOnly; SameSite=Strict${sessions.secure ? '; Secure' : ''}`;
}

/**
 * Sets the session cookie (written as a header: Koa's cookie writer refuses `Secure` on a connection it sees as
 * plain http, which is what a TLS-terminating proxy in front of the service looks like).
 * @param ctx the response.
 * @param sessions the cookie's settings.
 * @param secret the session's secret.
 * @param expiresAt the session's absolute end (the cookie's Max-Age).
 */
export function setSessionCookie(ctx: AppContext, sessions: CookieSessions, secret: string, expiresAt: Date): void {
  const maxAge = Math.max(0, Math.floor((expiresAt.getTime() - Date.now()) / 1000));
  ctx.append('Set-Cookie', `${sessions.cookieName}=${secret}; Max-Age=${maxAge}; ${attributes(sessions)}`);
}

/**
 * Clears the session cookie in the browser.
 * @param ctx the response.
 * @param sessions the cookie's settings.
 */
export function clearSessionCookie(ctx: AppContext, sessions: CookieSessions): void {
  ctx.append(
    'Set-Cookie',
    `${sessions.cookieName}=; Max-Age=0; Expires=Thu, 01 Jan 1970 00:00:00 GMT; ${attributes(sessions)}`
  );
}

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * @param ctx the request.
 * @returns whether the request's method changes nothing (GET, HEAD, OPTIONS): no CSRF check.
 */
export function isSafeMethod(ctx: AppContext): boolean {
  return SAFE_METHODS.has(ctx.method);
}

/**
 * @param ctx the request.
 * @param sessions the cookie's settings.
 * @returns whether the request's `Origin` names this service: APP_URL's origin, or the request's own (its scheme and
 *   Host header, which a browser sets to the address it sends to, so a page of another site cannot make it match).
 */
export function hasOwnOrigin(ctx: AppContext, sessions: CookieSessions): boolean {
  const origin = ctx.get('origin');
  if (origin === '' || origin === 'null') return false;
  return origin === sessions.appOrigin || origin === `${ctx.protocol}://${ctx.host}`;
}
