/**
 * /api/session/sso: the console's "Sign in with SSO" through the identity provider of OIDC_CONSOLE_ISSUER
 * (commands/sso.ts; docs/identity.md). The sign-in page asks whether it is offered, sends the browser to `start`
 * (which sends it on to the provider with state, nonce and a PKCE challenge, and keeps the state in a short-lived
 * cookie of this browser), and the provider sends it back to `callback`, which ends in the same HttpOnly session
 * cookie as a token sign-in and lands on the console (or back on the sign-in page with `?sso_error=<reason>`).
 * Public routes: they read their cookies themselves.
 */
import { createSsoSession, countSsoStart, endSession } from '../../commands/sessions';
import { finishSso, SsoError, startSso, type ConsoleSso } from '../../commands/sso';
import { NotFoundError } from '../../lib/errors';
import { identityProviders } from '../../lib/oidc';
import type { AppContext } from '../context';
import type { AppDeps } from '../deps';
import { route, type RouteSpec } from '../route';
import { cookieSessions, sessionSecret, setSessionCookie, type CookieSessions } from '../sessionCookie';
import { ssoCallbackQuery, ssoResponse, ssoStartQuery } from './session.schema';

const tags = ['Session'];
const START_PATH = '/api/session/sso/start';
/** How long the browser keeps the state of a login under way (the login's own record lives as long). */
const STATE_COOKIE_SECONDS = 600;

/**
 * The state cookie: `SameSite=Lax`, since the provider's redirect back is a top-level navigation from its site
 * (a `Strict` cookie would not be sent with it); HttpOnly; `__Host-` and `Secure` when APP_URL is https.
 */
function stateCookieName(sessions: CookieSessions): string {
  return sessions.secure ? '__Host-aas_sso' : 'aas_sso';
}

function setStateCookie(ctx: AppContext, sessions: CookieSessions, value: string, maxAge: number): void {
  ctx.append(
    'Set-Cookie',
    `${stateCookieName(sessions)}=${value}; Max-Age=${maxAge}; Path=/; HttpOnly; SameSite=Lax${sessions.secure ? '; Secure' : ''}`
  );
}

const redirect = (description: string) => ({ contentType: 'text/plain', description });

/**
 * @param deps app dependencies.
 * @returns the route declarations.
 */
export function ssoRoutes(deps: AppDeps): RouteSpec[] {
  const sessions = cookieSessions(deps.config);
  const sso: ConsoleSso | undefined = deps.config.oidc.console;
  const providers = identityProviders(deps.config.oidc);
  const appUrl = deps.config.appUrl.replace(/\/+$/, '');
  const configured = (): ConsoleSso => {
    if (!sso) throw new NotFoundError('Sign in with SSO is not configured (OIDC_CONSOLE_ISSUER)');
    return sso;
  };
  return [
    route({
      method: 'get',
      path: '/session/sso',
      summary: 'Whether the console offers "Sign in with SSO", and through which identity provider',
      tags,
      auth: 'public',
      responses: { 200: ssoResponse },
      handler: (ctx) => {
        ctx.set('Cache-Control', 'no-store');
        ctx.body = sso
          ? { enabled: true, issuer: sso.issuer, startUrl: START_PATH }
          : { enabled: false, issuer: null, startUrl: null };
      },
    }),
    route({
      method: 'get',
      path: '/session/sso/start',
      summary:
        'Start "Sign in with SSO": to the identity provider (authorization code, PKCE S256, state, nonce); 404 when not configured',
      tags,
      auth: 'public',
      query: ssoStartQuery,
      responses: { 302: redirect('To the identity provider’s authorization endpoint') },
      errors: [404, 429, 503],
      handler: async (ctx, { query }) => {
        const client = configured();
        await countSsoStart(ctx.ip, deps.config.session);
        let started: { url: string; state: string };
        try {
          started = await startSso(providers, client, appUrl, query.next);
        } catch (err) {
          if (!(err instanceof SsoError)) throw err;
          ctx.state.log.warn({ reason: err.reason, detail: err.message }, 'sso start failed');
          return ctx.redirect(`/sign-in?sso_error=${err.reason}`);
        }
        ctx.set('Cache-Control', 'no-store');
        setStateCookie(ctx, sessions, started.state, STATE_COOKIE_SECONDS);
        ctx.redirect(started.url);
      },
    }),
    route({
      method: 'get',
      path: '/session/sso/callback',
      summary:
        'The identity provider’s redirect back: exchanges the code, verifies the ID token, opens the session (cookie)',
      tags,
      auth: 'public',
      query: ssoCallbackQuery,
      responses: {
        303: redirect(
          'Signed in: to the console with the session cookie set; refused: to `/sign-in?sso_error=<denied|expired|unmapped|invalid|unavailable>`'
        ),
      },
      errors: [404],
      handler: async (ctx, { query }) => {
        const client = configured();
        ctx.set('Cache-Control', 'no-store');
        ctx.set('Referrer-Policy', 'no-referrer');
        const cookieState = ctx.cookies.get(stateCookieName(sessions)) || undefined;
        setStateCookie(ctx, sessions, '', 0);
        ctx.status = 303;
        try {
          const { auth, claims, next } = await finishSso(providers, client, appUrl, { ...query, cookieState });
          const live = await createSsoSession(auth, { issuer: claims.iss, subject: claims.sub }, sessions);
          const earlier = sessionSecret(ctx, sessions);
          if (earlier) await endSession(earlier);
          setSessionCookie(ctx, sessions, live.secret, live.session.expiresAt);
          ctx.state.log.info({ user: auth.userId, org: auth.organizationId }, 'sso sign-in');
          ctx.redirect(next);
        } catch (err) {
          if (!(err instanceof SsoError)) throw err;
          ctx.state.log.warn({ reason: err.reason, detail: err.message }, 'sso sign-in refused');
          ctx.redirect(`/sign-in?sso_error=${err.reason}`);
        }
      },
    }),
  ];
}
