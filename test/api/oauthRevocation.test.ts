/**
 * What revocation reaches in the authorization server [issue 30 points 2, 7 and 8], over real HTTP: revoking a
 * service token ends the machine clients it registered and every grant approved with it (refresh tokens and the
 * access tokens already issued); a reused code or refresh token revokes everything issued from it; the
 * organization lists and deletes its clients; registration is rate limited per address; unused clients expire.
 */
import { revokeToken } from '../../commands/tokens';
import { sha256Hex } from '../../lib/crypto';
import { ApiToken, OAuthClient, RateWindow } from '../../models';
import { useServedTestApp } from '../helpers/app';
import { bearer, buildOrg, buildServiceToken } from '../helpers/factories';
import {
  consentedClient,
  exchangeCode,
  mcpStatus as mcpStatusOf,
  postForm,
  registerClient,
  registerMachineClient,
  TEST_REDIRECT,
} from '../helpers/mcp';
import { useTestDatabase } from '../helpers/mongo';
import type { BootstrapResult } from '../../commands/bootstrap';

useTestDatabase();
const app = useServedTestApp({}, { appUrl: true });
const limited = useServedTestApp({ OAUTH_REGISTRATIONS_PER_HOUR: '3' }, { appUrl: true });

const REDIRECT = TEST_REDIRECT;

const form = (path: string, fields: Record<string, string>, headers: Record<string, string> = {}) =>
  postForm(app.base, path, fields, headers);

/** 404: authenticated, only the session is unknown; 401: the token is refused. */
const mcpStatus = (token: string): Promise<number> => mcpStatusOf(app.base, token);

const tokenId = async (token: string): Promise<string> => (await ApiToken.findOne({ hash: sha256Hex(token) }))!._id;

/** A person's public client, approved with `personToken`, and the tokens of its code. */
async function personTokens(org: BootstrapResult, personToken: string) {
  const { clientId, verifier, answer: res } = await consentedClient(app.base, personToken);
  expect(res.status).toBe(303);
  const code = new URL(res.headers.get('location')!).searchParams.get('code')!;
  const exchange = () => exchangeCode(app.base, clientId, code, verifier);
  const first = await exchange();
  expect(first.status).toBe(200);
  const tokens = (await first.json()) as { access_token: string; refresh_token: string };
  const refresh = (refreshToken: string) =>
    form('/oauth/token', { grant_type: 'refresh_token', client_id: clientId, refresh_token: refreshToken });
  return { org, clientId, exchange, refresh, ...tokens };
}

describe('revoking a service token', () => {
  it('deletes the machine clients it registered and ends their access tokens', async () => {
    const org = await buildOrg();
    const svc = await buildServiceToken(org, ['mcp']);
    const machine = await registerMachineClient(app.base, svc);
    const basic = { authorization: `Basic ${btoa(`${machine.client_id}:${machine.client_secret}`)}` };
    const issued = await form('/oauth/token', { grant_type: 'client_credentials' }, basic);
    const { access_token: access } = (await issued.json()) as { access_token: string };
    expect(await mcpStatus(access)).toBe(404);

    await revokeToken(org.organizationId, await tokenId(svc));
    expect(await mcpStatus(access)).toBe(401);
    const again = await form('/oauth/token', { grant_type: 'client_credentials' }, basic);
    expect(again.status).toBe(401);
    expect(await OAuthClient.exists({ _id: machine.client_id })).toBeNull();
  });

  it('revokes the refresh tokens and access tokens of the grants approved with it', async () => {
    const org = await buildOrg();
    const personToken = await buildServiceToken(org, ['mcp']);
    const p = await personTokens(org, personToken);
    expect(await mcpStatus(p.access_token)).toBe(404);

    await revokeToken(org.organizationId, await tokenId(personToken));
    expect(await mcpStatus(p.access_token)).toBe(401);
    const refreshed = await p.refresh(p.refresh_token);
    expect(refreshed.status).toBe(400);
    expect(((await refreshed.json()) as { error: string }).error).toBe('invalid_grant');
  });
});

describe('reuse revokes what was issued', () => {
  it('a code redeemed twice revokes the access and refresh tokens of its first redemption', async () => {
    const org = await buildOrg();
    const p = await personTokens(org, await buildServiceToken(org, ['mcp']));
    expect(await mcpStatus(p.access_token)).toBe(404);
    const replay = await p.exchange();
    expect(replay.status).toBe(400);
    expect(await mcpStatus(p.access_token)).toBe(401);
    expect((await p.refresh(p.refresh_token)).status).toBe(400);
  });

  it('a refresh token used twice revokes the tokens its first use issued', async () => {
    const org = await buildOrg();
    const p = await personTokens(org, await buildServiceToken(org, ['mcp']));
    const rotated = (await (await p.refresh(p.refresh_token)).json()) as {
      access_token: string;
      refresh_token: string;
    };
    expect(await mcpStatus(rotated.access_token)).toBe(404);
    expect((await p.refresh(p.refresh_token)).status).toBe(400);
    expect(await mcpStatus(rotated.access_token)).toBe(401);
    expect(await mcpStatus(p.access_token)).toBe(401);
    expect((await p.refresh(rotated.refresh_token)).status).toBe(400);
  });
});

describe("the organization's clients", () => {
  it('lists its machine clients and the clients its members authorized, and deletes them', async () => {
    const org = await buildOrg();
    const other = await buildOrg();
    const api = (method: 'GET' | 'DELETE', path: string, token = org.serviceToken) =>
      fetch(`${app.base}/api${path}`, { method, headers: { authorization: bearer(token) } });
    const machine = await registerMachineClient(app.base, org.serviceToken);
    const basic = { authorization: `Basic ${btoa(`${machine.client_id}:${machine.client_secret}`)}` };
    const machineAccess = (
      (await (await form('/oauth/token', { grant_type: 'client_credentials' }, basic)).json()) as {
        access_token: string;
      }
    ).access_token;
    const p = await personTokens(org, await buildServiceToken(org, ['mcp']));

    const listed = await api('GET', '/oauth-clients');
    expect(listed.status).toBe(200);
    const { clients } = (await listed.json()) as { clients: { id: string; kind: string }[] };
    expect(clients.map((c) => [c.id, c.kind]).sort()).toEqual(
      [
        [machine.client_id, 'machine'],
        [p.clientId, 'person'],
      ].sort()
    );
    const theirs = (await (await api('GET', '/oauth-clients', other.serviceToken)).json()) as { clients: unknown[] };
    expect(theirs.clients).toEqual([]);
    expect((await api('DELETE', `/oauth-clients/${machine.client_id}`, other.serviceToken)).status).toBe(404);
    expect((await api('DELETE', `/oauth-clients/${p.clientId}`, other.serviceToken)).status).toBe(404);

    expect((await api('DELETE', `/oauth-clients/${machine.client_id}`)).status).toBe(200);
    expect(await mcpStatus(machineAccess)).toBe(401);
    expect((await form('/oauth/token', { grant_type: 'client_credentials' }, basic)).status).toBe(401);
    expect((await api('DELETE', `/oauth-clients/${p.clientId}`)).status).toBe(200);
    expect(await mcpStatus(p.access_token)).toBe(401);
    expect((await p.refresh(p.refresh_token)).status).toBe(400);
    const after = (await (await api('GET', '/oauth-clients')).json()) as { clients: unknown[] };
    expect(after.clients).toEqual([]);
  });
});

describe('registration limits', () => {
  it('rate limits registrations per address (429 with Retry-After and RateLimit headers)', async () => {
    // The address's window holds this file's other registrations (the same database): start it afresh.
    await RateWindow.deleteMany({ _id: /^oauth-register:/ });
    const statuses: number[] = [];
    let last: Response | undefined;
    for (let i = 0; i < 4; i += 1) {
      last = await registerClient(limited.base, { redirect_uris: [REDIRECT], token_endpoint_auth_method: 'none' });
      statuses.push(last.status);
    }
    expect(statuses).toEqual([201, 201, 201, 429]);
    expect(last!.headers.get('ratelimit-limit')).toBe('3');
    expect(Number(last!.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(((await last!.json()) as { error: string }).error).toBe('rate_limited');
  });

  it('a client never used expires; one in use lives on', async () => {
    const reg = await registerClient(app.base, { redirect_uris: [REDIRECT], token_endpoint_auth_method: 'none' });
    const { client_id: clientId } = (await reg.json()) as { client_id: string };
    const stored = (await OAuthClient.findById(clientId).lean())!;
    expect(stored.expiresAt!.getTime()).toBeLessThanOrEqual(Date.now() + 24 * 3600 * 1000);
    await OAuthClient.updateOne({ _id: clientId }, { $set: { expiresAt: new Date(Date.now() - 1000) } });
    const page = await fetch(
      `${app.base}/oauth/authorize?${new URLSearchParams({ client_id: clientId, response_type: 'code' })}`
    );
    expect(page.status).toBe(400);
    expect(await page.text()).toMatch(/Unknown client_id/);

    const org = await buildOrg();
    const p = await personTokens(org, await buildServiceToken(org, ['mcp']));
    const used = (await OAuthClient.findById(p.clientId).lean())!;
    expect(used.expiresAt!.getTime()).toBeGreaterThan(Date.now() + 7 * 24 * 3600 * 1000);
  });
});
