/**
 * /api/session: the console's sign-in with a personal access token, the session it opens (a cookie that scripts
 * cannot read), and sign-out (commands/sessions.ts; api/sessionCookie.ts; docs/decisions.md "Console sessions").
 * Public routes: they read the cookie themselves. Schemas: session.schema.ts.
 */
import {
  countSignIn,
  createSession,
  endSession,
  resolveSession,
  viewSession,
  type LiveSession,
} from '../../commands/sessions';
import { CsrfError, InvalidTokenError } from '../../lib/errors';
import type { AppContext } from '../context';
import type { AppDeps } from '../deps';
import { route, type RouteSpec } from '../route';
import {
  clearSessionCookie,
  cookieSessions,
  hasOwnOrigin,
  sessionSecret,
  setSessionCookie,
  type CookieSessions,
} from '../sessionCookie';
import { sessionResponse, signedOutResponse, signInBody } from './session.schema';

const tags = ['Session'];

async function answer(ctx: AppContext, live: LiveSession): Promise<void> {
  ctx.set('Cache-Control', 'no-store');
  const view = await viewSession(live);
  ctx.body = { ...view, expiresAt: view.expiresAt.toISOString(), idleExpiresAt: view.idleExpiresAt.toISOString() };
}

/** A browser sends `Origin` with every POST and DELETE: one naming another site is refused (login and logout CSRF). */
function refuseForeignOrigin(ctx: AppContext, sessions: CookieSessions): void {
  if (ctx.get('origin') !== '' && !hasOwnOrigin(ctx, sessions)) throw new CsrfError();
}

/**
 * @param deps app dependencies.
 * @returns the route declarations.
 */
export function sessionRoutes(deps: AppDeps): RouteSpec[] {
  const sessions = cookieSessions(deps.config);
  return [
    route({
      method: 'post',
      path: '/session',
      summary:
        'Sign in to the console with a personal access token (`td_…`): answers who is signed in and sets the session cookie',
      tags,
      auth: 'public',
      body: signInBody,
      responses: { 200: sessionResponse },
      errors: [401, 403, 429],
      handler: async (ctx, { body }) => {
        refuseForeignOrigin(ctx, sessions);
        await countSignIn(ctx.ip, body.token, deps.config.session);
        const live = await createSession(body.token, sessions);
        // A browser signing in again leaves no session of its earlier cookie behind.
        const earlier = sessionSecret(ctx, sessions);
        if (earlier) await endSession(earlier);
        setSessionCookie(ctx, sessions, live.secret, live.session.expiresAt);
        await answer(ctx, live);
      },
    }),
    route({
      method: 'get',
      path: '/session',
      summary:
        'The session of the request’s cookie: who is signed in and when the session ends; 401 when none is alive',
      tags,
      auth: 'public',
      responses: { 200: sessionResponse },
      errors: [401],
      handler: async (ctx) => {
        const secret = sessionSecret(ctx, sessions);
        const live = secret ? await resolveSession(secret, sessions) : null;
        if (!live) throw new InvalidTokenError(secret ? 'Session expired or signed out' : 'Not signed in');
        await answer(ctx, live);
      },
    }),
    route({
      method: 'delete',
      path: '/session',
      summary: 'Sign out: ends the cookie’s session on the server and clears the cookie (204 also without a session)',
      tags,
      auth: 'public',
      responses: { 204: signedOutResponse },
      errors: [403],
      handler: async (ctx) => {
        const secret = sessionSecret(ctx, sessions);
        if (secret) {
          if (!hasOwnOrigin(ctx, sessions)) throw new CsrfError();
          await endSession(secret);
        }
        clearSessionCookie(ctx, sessions);
        ctx.set('Cache-Control', 'no-store');
        ctx.status = 204;
      },
    }),
  ];
}
