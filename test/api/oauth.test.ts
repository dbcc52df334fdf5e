/**
 * The authorization server's endpoints over real HTTP (commands/oauthServer.ts, api/oauth.ts): registration rules,
 * the authorization endpoint's checks, codes and refresh tokens used exactly once (also when redeemed
 * concurrently), PKCE, client authentication, scope and resource checks, revocation, and the MCP endpoint's
 * refusal of expired, foreign-audience and revoked access tokens.
 */
import { randomBytes } from 'node:crypto';
import { SignJWT } from 'jose';
import { derivedKey } from '../../commands/oauthServer';
import { OAuthClient } from '../../models';
import { useServedTestApp } from '../helpers/app';
import { bearer, buildOrg, buildServiceToken } from '../helpers/factories';
import {
  consentedClient,
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
const app = useServedTestApp({}, { appUrl: true });

const REDIRECT = TEST_REDIRECT;

const form = (path: string, fields: Record<string, string>, headers: Record<string, string> = {}): Promise<Response> =>
  postForm(app.base, path, fields, headers);
const register = (body: object, headers: Record<string, string> = {}): Promise<Response> =>
  registerClient(app.base, body, headers);

/** A public client of people, a person's consent, and the code it brought back. */
async function authorize(): Promise<{ clientId: string; code: string; verifier: string; personToken: string }> {
  const org = await buildOrg();
  const personToken = await buildServiceToken(org, ['mcp']);
  const {
    registration: reg,
    clientId,
    verifier,
    answer: res,
  } = await consentedClient(app.base, personToken, {
    clientName: 'p',
    state: 'xyz',
  });
  expect(reg.status).toBe(201);
  expect(res.status).toBe(303);
  const location = new URL(res.headers.get('location')!);
  expect(location.searchParams.get('state')).toBe('xyz');
  expect(location.searchParams.get('iss')).toBe(app.base);
  return { clientId, code: location.searchParams.get('code')!, verifier, personToken };
}

const exchange = (clientId: string, code: string, verifier: string): Promise<Response> =>
  exchangeCode(app.base, clientId, code, verifier);

const mcpStatus = (token: string): Promise<number> => mcpStatusOf(app.base, token);

describe('registration', () => {
  it('makes public and confidential clients of people, and machine clients only with a service token carrying mcp', async () => {
    const res = await register({ redirect_uris: [REDIRECT], token_endpoint_auth_method: 'none' });
    expect(res.status).toBe(201);
    const body = (await res.json()) as Record<string, unknown>;
    expect(body).toMatchObject({ grant_types: ['authorization_code', 'refresh_token'], scope: 'mcp' });
    expect(body.client_secret).toBeUndefined();
    const anonymousMachine = await register({ grant_types: ['client_credentials'] });
    expect(anonymousMachine.status).toBe(400);
    expect(((await anonymousMachine.json()) as { error: string }).error).toBe('invalid_client_metadata');
    const org = await buildOrg();
    const weak = await register(
      { grant_types: ['client_credentials'] },
      { authorization: bearer(await buildServiceToken(org, ['agents:read'])) }
    );
    expect(weak.status).toBe(403);
    const machine = await registerMachineClient(app.base, org.serviceToken);
    expect(machine.client_secret).toMatch(/^oacs_/);
    const badRedirect = await register({ redirect_uris: ['http://example.com/cb'] });
    expect(badRedirect.status).toBe(400);
    expect(((await badRedirect.json()) as { error: string }).error).toBe('invalid_redirect_uri');
    const badField = await register({ redirect_uris: 'not a list' });
    expect(badField.status).toBe(400);
    expect(((await badField.json()) as { error: string }).error).toBe('invalid_client_metadata');
  });
});

describe('authorization code', () => {
  it('never redirects to an unregistered redirect URI; sends other errors back to the client', async () => {
    const reg = await register({ redirect_uris: [REDIRECT], token_endpoint_auth_method: 'none' });
    const { client_id } = (await reg.json()) as { client_id: string };
    const { challenge } = pkce();
    const q = (p: Record<string, string>): string => new URLSearchParams(p).toString();
    const other = await fetch(
      `${app.base}/oauth/authorize?${q({ response_type: 'code', client_id, redirect_uri: 'http://127.0.0.1:9/other', code_challenge: challenge, code_challenge_method: 'S256' })}`,
      { redirect: 'manual' }
    );
    expect(other.status).toBe(400);
    expect(other.headers.get('location')).toBeNull();
    const noPkce = await fetch(
      `${app.base}/oauth/authorize?${q({ response_type: 'code', client_id, redirect_uri: REDIRECT, state: 's' })}`,
      { redirect: 'manual' }
    );
    expect(noPkce.status).toBe(302);
    const back = new URL(noPkce.headers.get('location')!);
    expect([back.searchParams.get('error'), back.searchParams.get('state')]).toEqual(['invalid_request', 's']);
    const plain = await fetch(
      `${app.base}/oauth/authorize?${q({ response_type: 'code', client_id, redirect_uri: REDIRECT, code_challenge: challenge, code_challenge_method: 'plain' })}`,
      { redirect: 'manual' }
    );
    expect(new URL(plain.headers.get('location')!).searchParams.get('error')).toBe('invalid_request');
    const page = await fetch(
      `${app.base}/oauth/authorize?${q({ response_type: 'code', client_id, redirect_uri: REDIRECT, code_challenge: challenge, code_challenge_method: 'S256' })}`
    );
    expect(page.status).toBe(200);
    expect(page.headers.get('content-security-policy')).toContain("frame-ancestors 'none'");
  });

  it('a code is exchanged once, with its PKCE verifier; two exchanges at once give one token', async () => {
    const wrong = await authorize();
    const bad = await exchange(wrong.clientId, wrong.code, pkce().verifier);
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { error: string }).error).toBe('invalid_grant');
    // The failed attempt used the code up.
    expect((await exchange(wrong.clientId, wrong.code, wrong.verifier)).status).toBe(400);

    const a = await authorize();
    const results = await Promise.all([1, 2, 3].map(() => exchange(a.clientId, a.code, a.verifier)));
    expect(results.map((r) => r.status).sort()).toEqual([200, 400, 400]);
    const won = (await results.find((r) => r.status === 200)!.json()) as Record<string, string>;
    expect(won).toMatchObject({ token_type: 'Bearer', scope: 'mcp', expires_in: 3600 });
    expect(results.find((r) => r.status === 200)!.headers.get('cache-control')).toBe('no-store');
    // The losing redemptions are replays of a used code: what the code issued is revoked (RFC 9700 §4.14.2).
    expect(await mcpStatus(won.access_token)).toBe(401);
  });

  it('a refresh token is used once and rotated; revocation ends refresh and access tokens', async () => {
    const a = await authorize();
    const first = (await (await exchange(a.clientId, a.code, a.verifier)).json()) as Record<string, string>;
    const refresh = (body: Record<string, string>): Promise<Response> =>
      form('/oauth/token', { grant_type: 'refresh_token', client_id: a.clientId, refresh_token: body.refresh_token });
    const second = await refresh(first);
    expect(second.status).toBe(200);
    const rotated = (await second.json()) as Record<string, string>;
    expect(rotated.refresh_token).not.toBe(first.refresh_token);

    expect((await form('/oauth/revoke', { client_id: a.clientId, token: rotated.refresh_token })).status).toBe(200);
    expect((await refresh(rotated)).status).toBe(400);
    expect(await mcpStatus(rotated.access_token)).toBe(404);
    expect((await form('/oauth/revoke', { client_id: a.clientId, token: rotated.access_token })).status).toBe(200);
    expect(await mcpStatus(rotated.access_token)).toBe(401);
    // A used refresh token is refused (and revokes its family: test/api/oauthRevocation.test.ts).
    expect((await refresh(first)).status).toBe(400);
  });
});

describe('client credentials and token checks', () => {
  it('authenticates the client, grants only mcp for the MCP endpoint, and refuses unknown grants', async () => {
    const org = await buildOrg();
    const machine = await registerMachineClient(app.base, org.serviceToken);
    const basic = `Basic ${Buffer.from(`${machine.client_id}:${machine.client_secret}`).toString('base64')}`;
    const ok = await form('/oauth/token', { grant_type: 'client_credentials' }, { authorization: basic });
    expect(ok.status).toBe(200);
    const body = (await ok.json()) as Record<string, string>;
    expect(body.refresh_token).toBeUndefined();
    expect(await mcpStatus(body.access_token)).toBe(404);
    const post = await form('/oauth/token', {
      grant_type: 'client_credentials',
      client_id: machine.client_id,
      client_secret: machine.client_secret,
      resource: `${app.base}/mcp`,
    });
    expect(post.status).toBe(200);

    const cases: Array<[Record<string, string>, Record<string, string>, number, string]> = [
      [
        { grant_type: 'client_credentials' },
        { authorization: `Basic ${Buffer.from(`${machine.client_id}:nope`).toString('base64')}` },
        401,
        'invalid_client',
      ],
      [{ grant_type: 'client_credentials', scope: 'agents:read' }, { authorization: basic }, 400, 'invalid_scope'],
      [
        { grant_type: 'client_credentials', resource: 'https://elsewhere.example/mcp' },
        { authorization: basic },
        400,
        'invalid_target',
      ],
      [{ grant_type: 'password' }, { authorization: basic }, 400, 'unsupported_grant_type'],
      [{ grant_type: 'authorization_code', code: 'x' }, { authorization: basic }, 400, 'unauthorized_client'],
    ];
    for (const [fields, headers, status, error] of cases) {
      const res = await form('/oauth/token', fields, headers);
      expect({ fields, status: res.status, error: ((await res.json()) as { error: string }).error }).toEqual({
        fields,
        status,
        error,
      });
    }
    const json = await fetch(`${app.base}/oauth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{}',
    });
    expect(json.status).toBe(400);
    expect(((await json.json()) as { error: string }).error).toBe('invalid_request');
  });

  it('the MCP endpoint refuses expired tokens, tokens for another audience and tokens of a removed client', async () => {
    const key = derivedKey(app.t.config, 'oauth-access-token');
    const org = await buildOrg();
    const machine = await registerMachineClient(app.base, org.serviceToken);
    const sign = (aud: string, exp: number): Promise<string> =>
      new SignJWT({ scope: 'mcp', client_id: machine.client_id, org: org.organizationId })
        .setProtectedHeader({ alg: 'HS256', typ: 'at+jwt' })
        .setIssuer(app.base)
        .setAudience(aud)
        .setSubject(org.userId)
        .setJti(randomBytes(8).toString('hex'))
        .setIssuedAt()
        .setExpirationTime(exp)
        .sign(key);
    const now = Math.floor(Date.now() / 1000);
    expect(await mcpStatus(await sign(`${app.base}/mcp`, now + 60))).toBe(404);
    expect(await mcpStatus(await sign(`${app.base}/mcp`, now - 60))).toBe(401);
    expect(await mcpStatus(await sign('https://elsewhere.example/mcp', now + 60))).toBe(401);
    const valid = await sign(`${app.base}/mcp`, now + 60);
    await OAuthClient.deleteOne({ _id: machine.client_id });
    expect(await mcpStatus(valid)).toBe(401);
  });
});
