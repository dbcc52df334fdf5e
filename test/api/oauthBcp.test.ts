/**
 * The points of RFC 9700 (Best Current Practice for OAuth 2.0 Security) that no other test showed, over real HTTP
 * against the authorization server (commands/oauthServer.ts, api/oauth.ts) and the MCP endpoint. Each test names
 * its section; docs/decisions.md "OAuth 2.0 Security BCP (RFC 9700), point by point" maps every point to its test.
 */
import { sha256Hex } from '../../lib/crypto';
import { OAuthClient, OAuthGrant, type OAuthClientDoc, type OAuthGrantDoc } from '../../models';
import { useServedTestApp } from '../helpers/app';
import { bearer, buildOrg, buildServiceToken } from '../helpers/factories';
import {
  exchangeCode,
  mcpStatus as mcpStatusOf,
  pkce,
  postForm,
  registerClient,
  registerMachineClient,
  TEST_REDIRECT,
} from '../helpers/mcp';
import { useTestDatabase } from '../helpers/mongo';

useTestDatabase();
// This file registers more clients than the default anonymous budget of an hour (20 per address).
const app = useServedTestApp({ OAUTH_REGISTRATIONS_PER_HOUR: '1000' }, { appUrl: true });

const REDIRECT = TEST_REDIRECT;
type Json = Record<string, unknown>;

const form = (path: string, fields: Record<string, string>, headers: Record<string, string> = {}): Promise<Response> =>
  postForm(app.base, path, fields, headers);
const errorOf = async (res: Response): Promise<string> => ((await res.json()) as { error: string }).error;
const basic = (id: string, secret: string): Record<string, string> => ({
  authorization: `Basic ${Buffer.from(`${id}:${secret}`).toString('base64')}`,
});
const claimsOf = (jwt: string): Json => JSON.parse(Buffer.from(jwt.split('.')[1], 'base64url').toString()) as Json;
const location = (res: Response): URL | null => {
  const to = res.headers.get('location');
  return to === null ? null : new URL(to);
};

/** A registered client of people (public unless told otherwise). */
async function personClient(
  body: Json = { token_endpoint_auth_method: 'none' }
): Promise<Json & { client_id: string }> {
  const res = await registerClient(app.base, { redirect_uris: [REDIRECT], ...body });
  expect(res.status).toBe(201);
  return (await res.json()) as Json & { client_id: string };
}

/** A person (a service token with scope mcp). */
async function person(): Promise<string> {
  return buildServiceToken(await buildOrg(), ['mcp']);
}

/** The authorization request's parameters (code + PKCE S256, scope mcp, state `st`). */
function authorizeParams(clientId: string, challenge: string, overrides: Record<string, string> = {}) {
  return {
    response_type: 'code',
    client_id: clientId,
    redirect_uri: REDIRECT,
    code_challenge: challenge,
    code_challenge_method: 'S256',
    scope: 'mcp',
    state: 'st',
    ...overrides,
  };
}

/** The person approves (or denies) on the consent page: the POST its form sends. */
async function consent(clientId: string, token: string, fields: Record<string, string> = {}) {
  const { verifier, challenge } = pkce();
  const res = await form('/oauth/authorize', {
    ...authorizeParams(clientId, challenge),
    service_token: token,
    decision: 'approve',
    ...fields,
  });
  return { res, verifier, code: location(res)?.searchParams.get('code') ?? '' };
}

const getAuthorize = (params: Record<string, string>, headers: Record<string, string> = {}): Promise<Response> =>
  fetch(`${app.base}/oauth/authorize?${new URLSearchParams(params)}`, { redirect: 'manual', headers });

describe('§2.1 redirect URIs', () => {
  it('2.1: the redirect URI is matched exactly; anything else is a page, never a redirect', async () => {
    const { client_id: clientId } = await personClient();
    const { challenge } = pkce();
    const near = [
      'http://127.0.0.1:9/callback/x',
      'http://127.0.0.1:9/callback?next=https://evil.example',
      'http://127.0.0.1:9/callback/',
      'http://127.0.0.1:9/Callback',
      'http://127.0.0.1:10/callback',
      'http://localhost:9/callback',
      'https://127.0.0.1:9/callback',
    ];
    for (const uri of near) {
      const res = await getAuthorize(authorizeParams(clientId, challenge, { redirect_uri: uri }));
      expect({ uri, status: res.status, location: res.headers.get('location') }).toEqual({
        uri,
        status: 400,
        location: null,
      });
    }
    expect((await getAuthorize(authorizeParams(clientId, challenge))).status).toBe(200);
  });

  it('2.6: redirect URIs are https, or http on a loopback host (native apps), without a fragment', async () => {
    const refused = [
      'http://client.example/cb',
      'https://client.example/cb#fragment',
      'javascript:alert(1)',
      'data:text/html,hi',
      'ftp://client.example/cb',
      'not a url',
    ];
    for (const uri of refused) {
      const res = await registerClient(app.base, { redirect_uris: [uri], token_endpoint_auth_method: 'none' });
      expect({ uri, status: res.status, error: await errorOf(res) }).toEqual({
        uri,
        status: 400,
        error: 'invalid_redirect_uri',
      });
    }
    for (const uri of ['https://client.example/cb', 'http://[::1]:8123/cb', 'http://localhost:8123/cb'])
      expect(
        (await registerClient(app.base, { redirect_uris: [uri], token_endpoint_auth_method: 'none' })).status
      ).toBe(201);
  });
});

describe('§2.1.1 PKCE and the authorization code', () => {
  it('2.1.1 / 4.8: PKCE S256 is required at both ends; a token request without its verifier is refused', async () => {
    const { client_id: clientId } = await personClient();
    const { challenge } = pkce();
    // No challenge, challenge without method (RFC 7636: plain), plain, a challenge too short: back with an error.
    for (const overrides of <Record<string, string>[]>[
      { code_challenge: '' },
      { code_challenge_method: '' },
      { code_challenge_method: 'plain' },
      { code_challenge: 'short' },
    ]) {
      const params = Object.fromEntries(
        Object.entries(authorizeParams(clientId, challenge, overrides)).filter(([, v]) => v !== '')
      );
      const back = location(await getAuthorize(params));
      expect({ overrides, error: back?.searchParams.get('error') }).toEqual({ overrides, error: 'invalid_request' });
    }
    const { code, verifier } = await consent(clientId, await person());
    const token = (fields: Record<string, string>) =>
      form('/oauth/token', {
        grant_type: 'authorization_code',
        client_id: clientId,
        code,
        redirect_uri: REDIRECT,
        ...fields,
      });
    const without = await token({});
    expect([without.status, await errorOf(without)]).toEqual([400, 'invalid_request']);
    const tooShort = await token({ code_verifier: 'abc' });
    expect([tooShort.status, await errorOf(tooShort)]).toEqual([400, 'invalid_request']);
    // Neither spent the code: the right verifier still redeems it.
    expect((await token({ code_verifier: verifier })).status).toBe(200);
  });

  it('4.5: a code is bound to its client and redirect URI, and expires', async () => {
    const a = await personClient();
    const b = await personClient();
    const token = await person();
    const { code, verifier } = await consent(a.client_id, token);
    const stolen = await exchangeCode(app.base, b.client_id, code, verifier);
    expect([stolen.status, await errorOf(stolen)]).toEqual([400, 'invalid_grant']);
    const elsewhere = await form('/oauth/token', {
      grant_type: 'authorization_code',
      client_id: a.client_id,
      code,
      code_verifier: verifier,
      redirect_uri: 'http://127.0.0.1:9/other',
    });
    expect([elsewhere.status, await errorOf(elsewhere)]).toEqual([400, 'invalid_grant']);

    const fresh = await consent(a.client_id, token);
    const stored = (await OAuthGrant.findById(sha256Hex(fresh.code)).lean<OAuthGrantDoc>())!;
    expect(stored.expiresAt.getTime()).toBeLessThanOrEqual(Date.now() + 600_000);
    await OAuthGrant.updateOne({ _id: sha256Hex(fresh.code) }, { $set: { expiresAt: new Date(Date.now() - 1000) } });
    const late = await exchangeCode(app.base, a.client_id, fresh.code, fresh.verifier);
    expect([late.status, await errorOf(late)]).toEqual([400, 'invalid_grant']);
  });
});

describe('§2.1.2 and §2.4: no implicit grant, no password grant', () => {
  it('refuses response_type token and grant_type password, and publishes neither', async () => {
    const implicit = await registerClient(app.base, { redirect_uris: [REDIRECT], response_types: ['token'] });
    expect([implicit.status, await errorOf(implicit)]).toEqual([400, 'invalid_client_metadata']);
    const { client_id: clientId } = await personClient();
    const back = location(await getAuthorize(authorizeParams(clientId, pkce().challenge, { response_type: 'token' })));
    expect(back?.searchParams.get('error')).toBe('unsupported_response_type');
    expect(back?.searchParams.get('access_token')).toBeNull();
    const password = await form('/oauth/token', {
      grant_type: 'password',
      client_id: clientId,
      username: 'u',
      password: 'p',
    });
    expect([password.status, await errorOf(password)]).toEqual([400, 'unsupported_grant_type']);
    const metadata = (await (await fetch(`${app.base}/.well-known/oauth-authorization-server`)).json()) as Json;
    expect(metadata.response_types_supported).toEqual(['code']);
    expect(metadata.grant_types_supported).not.toContain('password');
    expect(metadata.grant_types_supported).not.toContain('implicit');
  });
});

describe('§2.2.2 / §4.14 refresh tokens', () => {
  it('a refresh token is bound to its client and cannot widen the scope or the audience', async () => {
    const a = await personClient();
    const b = await personClient();
    const token = await person();
    const tokensOf = async (): Promise<Json> => {
      const { code, verifier } = await consent(a.client_id, token);
      return (await (await exchangeCode(app.base, a.client_id, code, verifier)).json()) as Json;
    };
    const tokens = await tokensOf();
    const refresh = (clientId: string, refreshToken: unknown, fields: Record<string, string> = {}) =>
      form('/oauth/token', {
        grant_type: 'refresh_token',
        client_id: clientId,
        refresh_token: String(refreshToken),
        ...fields,
      });
    const foreign = await refresh(b.client_id, tokens.refresh_token);
    expect([foreign.status, await errorOf(foreign)]).toEqual([400, 'invalid_grant']);
    // The other client's attempt did not spend it.
    const rotated = (await (await refresh(a.client_id, tokens.refresh_token)).json()) as Json;
    expect(rotated.refresh_token).toMatch(/^oacr_/);
    const wider = await refresh(a.client_id, rotated.refresh_token, { scope: 'mcp agents:write' });
    expect([wider.status, await errorOf(wider)]).toEqual([400, 'invalid_scope']);
    const elsewhere = await refresh(a.client_id, (await tokensOf()).refresh_token, {
      resource: 'https://elsewhere.example/mcp',
    });
    expect([elsewhere.status, await errorOf(elsewhere)]).toEqual([400, 'invalid_target']);
  });
});

describe('§2.3 access token privilege restriction', () => {
  it('tokens are for the MCP endpoint only: audience, scope mcp, one hour; refused by /api; no other resource', async () => {
    const org = await buildOrg();
    const machine = await registerMachineClient(app.base, org.serviceToken);
    const res = await form(
      '/oauth/token',
      { grant_type: 'client_credentials' },
      basic(machine.client_id, machine.client_secret)
    );
    const { access_token: access } = (await res.json()) as { access_token: string };
    const claims = claimsOf(access);
    expect(claims).toMatchObject({ aud: `${app.base}/mcp`, iss: app.base, scope: 'mcp', sub: org.userId });
    expect((claims.exp as number) - (claims.iat as number)).toBe(3600);
    expect(await mcpStatusOf(app.base, access)).toBe(404);
    const api = await fetch(`${app.base}/api/agents`, { headers: { authorization: bearer(access) } });
    expect(api.status).toBe(401);
    const v1 = await fetch(`${app.base}/api/v1/agents`, { headers: { authorization: bearer(access) } });
    expect(v1.status).toBe(401);

    const { client_id: clientId } = await personClient();
    const other = location(
      await getAuthorize(authorizeParams(clientId, pkce().challenge, { resource: 'https://elsewhere.example/api' }))
    );
    expect(other?.searchParams.get('error')).toBe('invalid_target');
    const wide = location(await getAuthorize(authorizeParams(clientId, pkce().challenge, { scope: 'mcp *' })));
    expect(wide?.searchParams.get('error')).toBe('invalid_scope');
  });
});

describe('§2.5 client authentication', () => {
  it('a confidential client must authenticate; its secret is stored hashed; a public client cannot present one', async () => {
    const confidential = await personClient({ token_endpoint_auth_method: 'client_secret_basic' });
    const secret = String(confidential.client_secret);
    expect(secret).toMatch(/^oacs_/);
    const stored = (await OAuthClient.findById(confidential.client_id).lean<OAuthClientDoc>())!;
    expect(stored.secretHash).toBe(sha256Hex(secret));
    expect(JSON.stringify(stored)).not.toContain(secret);

    const { code, verifier } = await consent(confidential.client_id, await person());
    const fields = { grant_type: 'authorization_code', code, code_verifier: verifier, redirect_uri: REDIRECT };
    for (const [label, attempt] of [
      ['no secret', () => form('/oauth/token', { ...fields, client_id: confidential.client_id })],
      ['wrong secret', () => form('/oauth/token', fields, basic(confidential.client_id, 'oacs_wrong'))],
      ['no client', () => form('/oauth/token', fields)],
    ] as const) {
      const res = await attempt();
      expect({ label, status: res.status, error: await errorOf(res) }).toEqual({
        label,
        status: 401,
        error: 'invalid_client',
      });
    }
    expect((await form('/oauth/token', fields, basic(confidential.client_id, secret))).status).toBe(200);

    const open = await personClient();
    const p = await consent(open.client_id, await person());
    const withSecret = await form('/oauth/token', {
      grant_type: 'authorization_code',
      client_id: open.client_id,
      client_secret: 'oacs_made_up',
      code: p.code,
      code_verifier: p.verifier,
      redirect_uri: REDIRECT,
    });
    expect([withSecret.status, await errorOf(withSecret)]).toEqual([401, 'invalid_client']);
  });
});

describe('§2.6 / §4.15 identities the client does not choose', () => {
  it('the server assigns client ids; a token’s subject is the approving user, never the client', async () => {
    const chosen = await personClient({ token_endpoint_auth_method: 'none', client_id: 'usr_victim' });
    expect(chosen.client_id).toMatch(/^oac_/);
    const org = await buildOrg();
    const machine = await registerMachineClient(app.base, org.serviceToken);
    const res = await form(
      '/oauth/token',
      { grant_type: 'client_credentials' },
      basic(machine.client_id, machine.client_secret)
    );
    const claims = claimsOf(((await res.json()) as { access_token: string }).access_token);
    expect(claims).toMatchObject({ sub: org.userId, client_id: machine.client_id, org: org.organizationId });
    expect(claims.sub).not.toBe(claims.client_id);
  });
});

describe('§4.4 mix-up', () => {
  it('every authorization response carries iss, and the metadata says so (RFC 9207)', async () => {
    const metadata = (await (await fetch(`${app.base}/.well-known/oauth-authorization-server`)).json()) as Json;
    expect(metadata).toMatchObject({ issuer: app.base, authorization_response_iss_parameter_supported: true });
    const { client_id: clientId } = await personClient();
    const token = await person();
    const error = location(await getAuthorize(authorizeParams(clientId, pkce().challenge, { scope: 'admin' })));
    const approved = location((await consent(clientId, token)).res);
    const denied = location((await consent(clientId, token, { decision: 'deny' })).res);
    for (const back of [error, approved, denied])
      expect([back?.searchParams.get('iss'), back?.searchParams.get('state')]).toEqual([app.base, 'st']);
    expect(denied?.searchParams.get('error')).toBe('access_denied');
  });
});

describe('§4.11 open redirection, §4.12 303 not 307', () => {
  it('sends no one to a client before knowing the person; redirects after a form post are 303', async () => {
    const unknown = await getAuthorize(authorizeParams('oac_unknown', pkce().challenge));
    expect([unknown.status, unknown.headers.get('location')]).toEqual([400, null]);
    const { client_id: clientId } = await personClient();
    // A refusal without a known person: a page, no redirect (4.11.2).
    for (const token of ['', 'svc_unknown', 'td_not_a_service_token']) {
      const res = (await consent(clientId, token, { decision: 'deny' })).res;
      expect({ token, status: res.status, location: res.headers.get('location') }).toEqual({
        token,
        status: 200,
        location: null,
      });
      expect(await res.text()).toContain('Nothing was sent to the client');
    }
    const token = await person();
    const statuses = [
      (await consent(clientId, token)).res.status,
      (await consent(clientId, token, { decision: 'deny' })).res.status,
      (await consent(clientId, token, { code_challenge_method: 'plain' })).res.status,
    ];
    expect(statuses).toEqual([303, 303, 303]);
  });
});

describe('§4.11.2 errors before sign-in go back only to trusted redirect URIs', () => {
  it('a malformed request of an anonymous https client is shown on our page; loopback and organization clients get it back', async () => {
    const https = 'https://client.example/callback';
    const { challenge } = pkce();
    const malformed: Record<string, Record<string, string>> = {
      'no PKCE': { code_challenge: '' },
      'PKCE plain': { code_challenge_method: 'plain' },
      'bad scope': { scope: 'admin' },
      'bad response_type': { response_type: 'token' },
      'bad resource': { resource: 'https://elsewhere.example/mcp' },
    };
    // Anyone may register a client: its https URI is not trusted, the error stays on our page.
    const { client_id: anonymous } = await personClient({ token_endpoint_auth_method: 'none', redirect_uris: [https] });
    for (const [why, overrides] of Object.entries(malformed)) {
      const res = await getAuthorize(authorizeParams(anonymous, challenge, { redirect_uri: https, ...overrides }));
      expect({ why, status: res.status, location: res.headers.get('location') }).toEqual({
        why,
        status: 400,
        location: null,
      });
      expect(await res.text()).toContain('The client&#39;s authorization request is invalid');
    }
    // A client an organization registered (with its service token): its URI is trusted.
    const org = await buildOrg();
    const owned = await registerClient(
      app.base,
      { redirect_uris: [https], grant_types: ['authorization_code'], token_endpoint_auth_method: 'none' },
      { authorization: bearer(await buildServiceToken(org, ['mcp'])) }
    );
    expect(owned.status).toBe(201);
    const { client_id: organizationClient } = (await owned.json()) as { client_id: string };
    // A native client's loopback URI (RFC 8252): trusted.
    const { client_id: native } = await personClient();
    for (const [clientId, redirectUri] of [
      [organizationClient, https],
      [native, REDIRECT],
    ]) {
      for (const [why, overrides] of Object.entries(malformed)) {
        const res = await getAuthorize(
          authorizeParams(clientId, challenge, { redirect_uri: redirectUri, ...overrides })
        );
        expect({ why, status: res.status }).toEqual({ why, status: 302 });
        const back = location(res)!;
        expect(`${back.origin}${back.pathname}`).toBe(redirectUri);
        expect(back.searchParams.get('state')).toBe('st');
        expect(back.searchParams.get('error')).toMatch(
          /^(invalid_request|invalid_scope|unsupported_response_type|invalid_target)$/
        );
      }
    }
  });
});

describe('§4.16 clickjacking, §4.2 Referer, §2.6 CORS, §4.3 tokens in URLs', () => {
  it('every page of the authorization endpoint refuses framing, sends no Referer, loads nothing, is not cached', async () => {
    const { client_id: clientId } = await personClient();
    const { challenge } = pkce();
    const pages = [
      await getAuthorize(authorizeParams(clientId, challenge)),
      await getAuthorize(authorizeParams('oac_unknown', challenge)),
      (await consent(clientId, 'svc_unknown')).res,
      (await consent(clientId, '', { decision: 'deny' })).res,
    ];
    for (const res of pages) {
      expect(res.headers.get('content-type')).toMatch(/^text\/html/);
      expect(res.headers.get('x-frame-options')).toBe('DENY');
      expect(res.headers.get('content-security-policy')).toContain("frame-ancestors 'none'");
      expect(res.headers.get('content-security-policy')).toContain("default-src 'none'");
      expect(res.headers.get('referrer-policy')).toBe('no-referrer');
      expect(res.headers.get('cache-control')).toBe('no-store');
    }
  });

  it('the authorization endpoint answers no CORS; the MCP endpoint takes tokens only in the header', async () => {
    const { client_id: clientId } = await personClient();
    const origin = { origin: 'https://evil.example' };
    const get = await getAuthorize(authorizeParams(clientId, pkce().challenge), origin);
    expect(get.headers.get('access-control-allow-origin')).toBeNull();
    const preflight = await fetch(`${app.base}/oauth/authorize`, {
      method: 'OPTIONS',
      headers: { ...origin, 'access-control-request-method': 'POST' },
    });
    expect(preflight.headers.get('access-control-allow-origin')).toBeNull();

    const org = await buildOrg();
    const machine = await registerMachineClient(app.base, org.serviceToken);
    const res = await form(
      '/oauth/token',
      { grant_type: 'client_credentials' },
      basic(machine.client_id, machine.client_secret)
    );
    const { access_token: access } = (await res.json()) as { access_token: string };
    expect(res.headers.get('cache-control')).toBe('no-store');
    expect(await mcpStatusOf(app.base, access)).toBe(404);
    const inQuery = await fetch(`${app.base}/mcp?access_token=${encodeURIComponent(access)}`, {
      method: 'DELETE',
      headers: { 'mcp-session-id': 'mcps_none' },
    });
    expect(inQuery.status).toBe(401);
    const initialize = await fetch(`${app.base}/mcp?access_token=${encodeURIComponent(access)}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } },
      }),
    });
    expect(initialize.status).toBe(401);
    const resource = (await (await fetch(`${app.base}/.well-known/oauth-protected-resource/mcp`)).json()) as Json;
    expect(resource.bearer_methods_supported).toEqual(['header']);
  });
});
