/**
 * The authorization server's endpoints (commands/oauthServer.ts; paths from commands/oauth.ts, the one place the
 * metadata lives): dynamic client registration, the authorization endpoint with its consent page, the token
 * endpoint and revocation. Errors are OAuth error JSON (`{error, error_description}`; api/middlewares/errors.ts),
 * except on the consent page, which answers HTML.
 *
 * How a person authorizes a client [docs/decisions.md "MCP and OAuth"]: the consent page shows the client and the
 * scope and asks for one of the person's service tokens (scope `mcp` or `*`; made with the admin CLI or by an
 * administrator); the code, and the tokens it is exchanged for, act as that token's user in its organization.
 */
import type { Readable } from 'node:stream';
import { MCP_SCOPE, OAUTH_PATHS } from '../commands/oauth';
import {
  authenticateClient,
  exchangeToken,
  findClient,
  issueAuthorizationCode,
  presentedClient,
  registerClient,
  resolveResource,
  resolveScope,
  revokeOAuthToken,
  type ApprovedAuthorization,
} from '../commands/oauthServer';
import { hasScope, resolveToken, type AuthContext } from '../commands/tokens';
import { checkCharacters, type Schema } from '../lib/ajv';
import type { Config } from '../lib/config';
import { TOKEN_PREFIX } from '../lib/crypto';
import { OAuthError, RateLimitedError } from '../lib/errors';
import { countRequest } from '../commands/rateLimits';
import { clientAddress } from '../lib/clientAddress';
import type { AppContext } from './context';
import { route, type RouteSpec } from './route';
import {
  AUTHORIZE_PARAMS,
  authorizeQuery,
  registrationBody,
  registrationResponse,
  revocationResponse,
  tokenResponse,
} from './oauth.schema';
import { isLoopbackHostname } from '../lib/safeDestination';

const tags = ['OAuth'];
/** Largest form body the endpoints read. */
const FORM_LIMIT_BYTES = 64 * 1024;
const FORM = 'application/x-www-form-urlencoded';

/**
 * Reads an `application/x-www-form-urlencoded` body (the token, revocation and consent endpoints).
 * @returns its fields.
 * @throws OAuthError `invalid_request` for another media type or a body over 64 KiB.
 */
async function readForm(ctx: AppContext): Promise<URLSearchParams> {
  if (!ctx.is(FORM)) throw new OAuthError(400, 'invalid_request', `Content-Type must be ${FORM}`);
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of ctx.req as Readable) {
    size += (chunk as Buffer).length;
    if (size > FORM_LIMIT_BYTES) throw new OAuthError(400, 'invalid_request', 'Request body too large');
    chunks.push(chunk as Buffer);
  }
  const form = new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
  const problem = checkCharacters(Object.fromEntries(form));
  if (problem) throw new OAuthError(400, 'invalid_request', problem);
  return form;
}

/** An authorization request, checked (RFC 6749 §4.1.1, OAuth 2.1 §4.1.1, PKCE S256 required). */
type Checked =
  | { kind: 'page'; message: string }
  | { kind: 'redirect'; to: string }
  | { kind: 'ok'; approved: ApprovedAuthorization; state: string | null };

const escapeHtml = (s: string): string =>
  s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

function redirectWith(config: Readonly<Config>, redirectUri: string, params: Record<string, string | null>): string {
  const url = new URL(redirectUri);
  for (const [k, v] of Object.entries(params)) if (v !== null) url.searchParams.set(k, v);
  url.searchParams.set('iss', config.appUrl.replace(/\/+$/, '')); // RFC 9207
  return url.toString();
}

/**
 * A redirect URI the authorization server trusts enough to send an error to before anyone signed in (RFC 9700
 * §4.11.2) [docs/decisions.md "Identity providers (issue 43)"]: a loopback address (a native client on the person's
 * own machine, RFC 8252 §7.3: nothing there can phish), or any registered URI of a client registered with a service
 * token (an organization vouches for it). An anonymous registration's https URI is not trusted.
 */
function trustedRedirect(client: { organizationId?: string | null }, redirectUri: string): boolean {
  if (client.organizationId) return true;
  return isLoopbackHostname(new URL(redirectUri).hostname);
}

async function checkAuthorization(config: Readonly<Config>, params: URLSearchParams): Promise<Checked> {
  const get = (k: string): string | undefined => params.get(k) ?? undefined;
  const client = get('client_id') ? await findClient(get('client_id')!) : null;
  if (!client) return { kind: 'page', message: 'Unknown client_id.' };
  const requested = get('redirect_uri');
  const redirectUri = requested ?? (client.redirectUris.length === 1 ? client.redirectUris[0] : undefined);
  if (!redirectUri || !client.redirectUris.includes(redirectUri))
    return { kind: 'page', message: 'The redirect_uri is not one the client registered.' };
  const state = get('state') ?? null;
  // RFC 9700 §4.11.2: before anyone signed in, an error goes back automatically only to a redirect URI the server
  // trusts; any other client's errors are shown on our page.
  const fail = (error: string, description: string): Checked =>
    trustedRedirect(client, redirectUri)
      ? { kind: 'redirect', to: redirectWith(config, redirectUri, { error, error_description: description, state }) }
      : { kind: 'page', message: `The client's authorization request is invalid (${error}): ${description}.` };
  if (!client.grantTypes.includes('authorization_code'))
    return fail('unauthorized_client', 'The client is not registered for the authorization code grant');
  if (get('response_type') !== 'code') return fail('unsupported_response_type', 'response_type must be code');
  const challenge = get('code_challenge');
  if (!challenge || !/^[A-Za-z0-9_-]{43,128}$/.test(challenge))
    return fail('invalid_request', 'code_challenge is required (PKCE S256)');
  if (get('code_challenge_method') !== 'S256') return fail('invalid_request', 'code_challenge_method must be S256');
  try {
    const scope = resolveScope(get('scope'));
    const resource = resolveResource(config, get('resource'));
    return { kind: 'ok', approved: { client, redirectUri, codeChallenge: challenge, scope, resource }, state };
  } catch (err) {
    if (err instanceof OAuthError) return fail(err.oauthCode, err.message);
    throw err;
  }
}

function page(ctx: AppContext, status: number, title: string, body: string): void {
  ctx.status = status;
  ctx.type = 'text/html; charset=utf-8';
  ctx.set('Cache-Control', 'no-store');
  ctx.set('X-Frame-Options', 'DENY');
  ctx.set('Referrer-Policy', 'no-referrer');
  ctx.set(
    'Content-Security-Policy',
    "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'; base-uri 'none'"
  );
  ctx.body =
    `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${escapeHtml(title)}</title>` +
    '<meta name="viewport" content="width=device-width, initial-scale=1">' +
    '<style>body{font-family:system-ui,sans-serif;max-width:32rem;margin:3rem auto;padding:0 1rem}' +
    'input[type=password]{width:100%;padding:.5rem}button{padding:.5rem 1rem;margin:.5rem .5rem 0 0}' +
    '.error{color:#b00020}</style></head><body>' +
    `<h1>${escapeHtml(title)}</h1>${body}</body></html>`;
}

function consentPage(ctx: AppContext, params: URLSearchParams, approved: ApprovedAuthorization, error?: string): void {
  const hidden = AUTHORIZE_PARAMS.filter((k) => params.get(k) !== null)
    .map((k) => `<input type="hidden" name="${k}" value="${escapeHtml(params.get(k)!)}">`)
    .join('');
  const name = approved.client.name || approved.client._id;
  page(
    ctx,
    error ? 401 : 200,
    'Authorize an MCP client',
    `<p><strong>${escapeHtml(name)}</strong> asks to use the MCP endpoint (scope <code>${escapeHtml(
      approved.scope
    )}</code>) as you, in your organization: your agents, chats, jobs and missions.</p>` +
      `<p>It will be sent back to <code>${escapeHtml(approved.redirectUri)}</code>.</p>` +
      (error ? `<p class="error">${escapeHtml(error)}</p>` : '') +
      `<form method="post" action="${OAUTH_PATHS.authorize}">${hidden}` +
      '<label for="service_token">Your service token (<code>svc_…</code>, scope <code>mcp</code> or <code>*</code>)' +
      '</label><input type="password" id="service_token" name="service_token" autocomplete="off">' +
      '<button type="submit" name="decision" value="approve">Approve</button>' +
      '<button type="submit" name="decision" value="deny">Deny</button></form>'
  );
}

const formBody = (description: string): Schema => ({ contentType: FORM, description });
const html = (description: string): Schema => ({ contentType: 'text/html', description });
const redirect = (description: string): Schema => ({ contentType: 'text/plain', description });

/**
 * The registration's optional service token: a machine client belongs to its organization and user.
 * @returns the owner, or null for an anonymous registration.
 */
async function registrationOwner(ctx: AppContext): Promise<AuthContext | null> {
  const header = ctx.get('authorization');
  if (header === '') return null;
  const token = /^Bearer[ ]+(\S+)\s*$/i.exec(header)?.[1];
  const resolved = token?.startsWith(TOKEN_PREFIX.service) ? await resolveToken(token, 'service') : 'invalid';
  if (typeof resolved === 'string') throw new OAuthError(401, 'invalid_token', 'Invalid or expired service token');
  if (!hasScope(resolved.scopes, MCP_SCOPE))
    throw new OAuthError(403, 'insufficient_scope', `The service token lacks the scope ${MCP_SCOPE}`);
  return resolved;
}

/** Registrations are counted in windows of an hour [docs/decisions.md "Security", "OAuth registrations counted apart"]. */
const REGISTRATION_WINDOW_SECONDS = 3600;

/**
 * Counts a registration once its caller is known and sets the RateLimit-* headers: an authenticated one (a service
 * token) against its organization, an anonymous one against the client's address (the socket's, or the one a trusted
 * proxy names: lib/clientAddress.ts). Anonymous callers can spend only the anonymous budget of their address, never
 * an organization's.
 * @param owner the registration's owner, or null when anonymous.
 * @throws RateLimitedError (429 `rate_limited`, Retry-After) past `limit` in the window.
 */
async function limitRegistrations(
  ctx: AppContext,
  config: Readonly<Config>,
  owner: { organizationId: string } | null
): Promise<void> {
  const limit = config.oauthRegistrationsPerHour;
  const key = owner
    ? `oauth-register:org:${owner.organizationId}`
    : `oauth-register:anon:${clientAddress(ctx.req.socket.remoteAddress, ctx.req.headers['x-forwarded-for'], config.trustProxy)}`;
  const now = Date.now();
  const { count, resetAt } = await countRequest(key, REGISTRATION_WINDOW_SECONDS, now);
  const resetIn = Math.max(1, Math.ceil((resetAt - now) / 1000));
  ctx.set({
    'RateLimit-Limit': String(limit),
    'RateLimit-Remaining': String(Math.max(0, limit - count)),
    'RateLimit-Reset': String(resetIn),
    'RateLimit-Policy': `${limit};w=${REGISTRATION_WINDOW_SECONDS}`,
  });
  if (count > limit) throw new RateLimitedError(resetIn);
}

/**
 * @param config APP_URL and ENCRYPTION_KEY.
 * @returns the authorization server's route declarations (mounted at the root).
 */
export function oauthRoutes(config: Readonly<Config>): RouteSpec[] {
  return [
    route({
      method: 'post',
      path: OAUTH_PATHS.register,
      summary: 'Dynamic client registration (RFC 7591); with a service token: a machine client (client credentials)',
      tags,
      auth: 'public',
      body: registrationBody,
      responses: { 201: registrationResponse },
      errors: [401, 403, 429],
      handler: async (ctx, { body }) => {
        const owner = await registrationOwner(ctx);
        await limitRegistrations(ctx, config, owner);
        ctx.status = 201;
        ctx.set('Cache-Control', 'no-store');
        ctx.body = await registerClient(body, owner as never);
      },
    }),
    route({
      method: 'get',
      path: OAUTH_PATHS.authorize,
      summary: 'Authorization endpoint (code + PKCE S256): the consent page',
      tags,
      auth: 'public',
      query: authorizeQuery,
      responses: {
        200: html('The consent page'),
        302: redirect('Back to the client with an error (`error`, `state`, `iss`)'),
      },
      handler: async (ctx) => {
        const params = new URLSearchParams(ctx.querystring);
        const checked = await checkAuthorization(config, params);
        if (checked.kind === 'page')
          return page(ctx, 400, 'Invalid authorization request', escapeHtml(checked.message));
        if (checked.kind === 'redirect') return ctx.redirect(checked.to);
        consentPage(ctx, params, checked.approved);
      },
    }),
    route({
      method: 'post',
      path: OAUTH_PATHS.authorize,
      summary: 'Authorization endpoint: the person approves (with a service token) or denies; back to the client',
      tags,
      auth: 'public',
      rawBody: formBody('The authorization request’s parameters, `service_token` and `decision` (approve | deny)'),
      responses: {
        200: html('The consent page again (a missing or refused service token), or a denial without one'),
        303: redirect(
          'Back to the client with `code` (or `error`), `state` and `iss` (a denial: only for a known person)'
        ),
      },
      handler: async (ctx) => {
        const form = await readForm(ctx);
        const checked = await checkAuthorization(config, form);
        if (checked.kind === 'page')
          return page(ctx, 400, 'Invalid authorization request', escapeHtml(checked.message));
        ctx.status = 303;
        if (checked.kind === 'redirect') return ctx.redirect(checked.to);
        const { approved, state } = checked;
        const token = form.get('service_token') ?? '';
        const person = token.startsWith(TOKEN_PREFIX.service) ? await resolveToken(token, 'service') : 'invalid';
        if (form.get('decision') !== 'approve') {
          // RFC 9700 §4.11.2: the person is authenticated before being sent to a client's redirect URI, so a
          // client registered by anyone cannot use a refusal to bounce people to its site.
          if (typeof person === 'string')
            return page(
              ctx,
              200,
              'Request denied',
              '<p>Nothing was sent to the client. You can close this window.</p>'
            );
          ctx.redirect(
            redirectWith(config, approved.redirectUri, {
              error: 'access_denied',
              error_description: 'The person denied the request',
              state,
            })
          );
          return;
        }
        if (typeof person === 'string')
          return consentPage(ctx, form, approved, 'That service token is unknown, revoked or expired.');
        if (!hasScope(person.scopes, MCP_SCOPE))
          return consentPage(ctx, form, approved, `That service token lacks the scope ${MCP_SCOPE}.`);
        const code = await issueAuthorizationCode(approved, person);
        ctx.state.log.info({ client: approved.client._id, user: person.userId }, 'oauth code issued');
        ctx.status = 303;
        ctx.redirect(redirectWith(config, approved.redirectUri, { code, state }));
      },
    }),
    route({
      method: 'post',
      path: OAUTH_PATHS.token,
      summary: 'Token endpoint: authorization_code (PKCE), refresh_token, client_credentials → a JWT for /mcp',
      tags,
      auth: 'public',
      rawBody: formBody('`grant_type` and its parameters (RFC 6749 §4), client credentials (Basic or in the body)'),
      responses: { 200: tokenResponse },
      errors: [401],
      handler: async (ctx) => {
        const form = await readForm(ctx);
        const client = await authenticateClient(presentedClient(ctx.get('authorization'), form));
        const tokens = await exchangeToken(config, client, form);
        ctx.state.log.info({ client: client._id, grant: form.get('grant_type') }, 'oauth token issued');
        ctx.set('Cache-Control', 'no-store');
        ctx.set('Pragma', 'no-cache');
        ctx.body = tokens;
      },
    }),
    route({
      method: 'post',
      path: OAUTH_PATHS.revoke,
      summary: 'Token revocation (RFC 7009): a refresh token or an access token of the client',
      tags,
      auth: 'public',
      rawBody: formBody('`token` (and `token_type_hint`), client credentials (Basic or in the body)'),
      responses: { 200: revocationResponse },
      errors: [401],
      handler: async (ctx) => {
        const form = await readForm(ctx);
        const client = await authenticateClient(presentedClient(ctx.get('authorization'), form));
        const token = form.get('token');
        if (!token) throw new OAuthError(400, 'invalid_request', 'Missing required parameter: token');
        await revokeOAuthToken(config, client, token);
        ctx.body = {};
      },
    }),
  ];
}
