/**
 * The console's session (issue 36 point 2), end to end over real HTTP with the real worker and the embedded
 * database: sign-in with a personal access token → the cookie's attributes (http and https APP_URL) → the cookie on
 * both surfaces (a v1 route, a current route, a chat message and its stream) → the CSRF check on requests that
 * change something → sign-out → revocation and leaving the organization end it at once → idle and absolute expiry
 * (short configured values) → refused tokens, malformed bodies and the sign-in rate limit → the MCP endpoint refuses
 * the cookie.
 */
import type { Response } from 'supertest';
import { authChanged, createToken, revokeToken } from '../../../commands/tokens';
import { sha256Hex } from '../../../lib/crypto';
import { ApiToken, ConsoleSession, Membership, RateWindow } from '../../../models';
import { useTestApp, type TestApp } from '../../helpers/app';
import { chatFinished, currentError } from '../../helpers/current';
import { bearer, buildMember, buildOrg } from '../../helpers/factories';
import { useTestDatabase } from '../../helpers/mongo';
import { openSse, waitForEvent } from '../../helpers/sse';
import { v1Error } from '../../helpers/v1';
import { useExecutionStack } from '../../helpers/worker';

useTestDatabase();
const stack = useExecutionStack(
  'session',
  { DEFAULT_MODEL: 'claude-test', SESSION_SIGNIN_PER_TOKEN: '3', SESSION_SIGNIN_PER_ADDRESS: '6' },
  { appUrl: true }
);
const HTTPS_APP_URL = 'https://console.example.com';
const secure = useTestApp({ APP_URL: HTTPS_APP_URL });
const short = useTestApp({ SESSION_IDLE_TIMEOUT: '2s', SESSION_MAX_AGE: '6s' });

// Sign-in attempts are counted per client address: each test starts with no attempt counted.
beforeEach(async () => RateWindow.deleteMany({}));

const COOKIE = /^aas_session=([A-Za-z0-9_-]{43}); Max-Age=(\d+); Path=\/; HttpOnly; SameSite=Strict$/;

interface SignedIn {
  res: Response;
  /** The `Cookie` request header that carries the session. */
  cookie: string;
  secret: string;
}

/** Signs in as a browser on the app's page does (its Origin). */
async function signIn(token: string, t: TestApp = stack.t, origin = t.config.appUrl): Promise<SignedIn> {
  const res = await t.request.post('/api/session').set('Origin', origin).send({ token });
  const set = (res.headers['set-cookie'] as unknown as string[] | undefined)?.[0] ?? '';
  const pair = set.split(';')[0];
  return { res, cookie: pair, secret: pair.slice(pair.indexOf('=') + 1) };
}

/** A request of the app as the browser sends it with the cookie (and the page's Origin when `origin` is set). */
function asCookie(t: TestApp, cookie: string, origin?: string) {
  const withOrigin = <R extends { set: (k: string, v: string) => R }>(r: R): R =>
    origin ? r.set('Origin', origin) : r;
  return {
    get: (p: string) => t.request.get(p).set('Cookie', cookie),
    post: (p: string, body?: object) => withOrigin(t.request.post(p).set('Cookie', cookie)).send(body),
    del: (p: string) => withOrigin(t.request.delete(p).set('Cookie', cookie)),
  };
}

describe('sign-in', () => {
  it('answers the user and organization and sets an HttpOnly, SameSite=Strict cookie (no Secure on http); only hashes are stored', async () => {
    const org = await buildOrg({ org: 'Console Org' });
    const { res, cookie, secret } = await signIn(org.apiToken);
    expect(res.status).toBe(200);
    expect(res.headers['cache-control']).toBe('no-store');
    expect(res.body).toEqual({
      user: { id: org.userId, email: expect.stringMatching(/@example\.com$/), name: expect.any(String) },
      organization: { id: org.organizationId, name: 'Console Org' },
      expiresAt: expect.any(String),
      idleExpiresAt: expect.any(String),
    });
    const setCookie = res.headers['set-cookie'] as unknown as string[];
    expect(setCookie).toHaveLength(1);
    expect(setCookie[0]).toMatch(COOKIE);
    expect(setCookie[0]).not.toMatch(/secure/i);
    // The token is never sent back, nor kept: the session holds hashes only.
    expect(JSON.stringify(res.body) + setCookie[0]).not.toContain(org.apiToken);
    const stored = await ConsoleSession.findById(sha256Hex(secret)).lean();
    expect(stored).toMatchObject({ organizationId: org.organizationId, userId: org.userId });
    expect(JSON.stringify(stored)).not.toContain(org.apiToken);
    expect(JSON.stringify(stored)).not.toContain(secret);

    const again = await asCookie(stack.t, cookie).get('/api/session');
    expect(again.status).toBe(200);
    expect(again.body.user.id).toBe(org.userId);
    expect(again.body.organization.id).toBe(org.organizationId);
    expect((await stack.t.request.get('/api/session')).body).toEqual(currentError('invalid_token', 'Not signed in'));
  });

  it('with an https APP_URL the cookie is __Host-aas_session and Secure, and it works there', async () => {
    const org = await buildOrg();
    const { res, cookie } = await signIn(org.apiToken, secure, HTTPS_APP_URL);
    expect(res.status).toBe(200);
    expect((res.headers['set-cookie'] as unknown as string[])[0]).toMatch(
      /^__Host-aas_session=[A-Za-z0-9_-]{43}; Max-Age=\d+; Path=\/; HttpOnly; SameSite=Strict; Secure$/
    );
    expect((await asCookie(secure, cookie).get('/api/v1/agents')).status).toBe(200);
    const created = await asCookie(secure, cookie, HTTPS_APP_URL).post('/api/agents', {
      name: 'A',
      system_prompt: 'p',
    });
    expect(created.status).toBe(201);
    // The request's own origin passes the CSRF check too (the service reached at another address than APP_URL).
    const base = await secure.listen();
    const own = await fetch(`${base}/api/agents`, {
      method: 'POST',
      headers: { cookie, origin: base, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'B', system_prompt: 'p' }),
    });
    expect(own.status).toBe(201);
    // The name without its prefix is not the session's cookie there.
    expect((await asCookie(secure, cookie.replace('__Host-', '')).get('/api/v1/agents')).status).toBe(401);
    const doc = (await secure.request.get('/api/openapi.json')).body;
    expect(doc.components.securitySchemes.consoleSession).toMatchObject({
      type: 'apiKey',
      in: 'cookie',
      name: '__Host-aas_session',
    });
  });

  it('refuses a wrong, revoked, expired, svc_ or garbage token with 401, and a malformed body with 400', async () => {
    const org = await buildOrg();
    const refused = async (token: string): Promise<Response> => {
      const res = await stack.t.request.post('/api/session').set('Origin', stack.t.config.appUrl).send({ token });
      expect(res.status).toBe(401);
      expect(res.headers['set-cookie']).toBeUndefined();
      return res;
    };
    expect((await refused(`td_${'x'.repeat(40)}`)).body).toEqual(
      currentError('invalid_token', 'Invalid or expired token')
    );
    const revoked = await createToken({ organizationId: org.organizationId, userId: org.userId, kind: 'v1' });
    await revokeToken(org.organizationId, revoked.record._id);
    expect((await refused(revoked.token)).body).toEqual(currentError('invalid_token', 'Invalid or expired token'));
    const expired = await createToken({ organizationId: org.organizationId, userId: org.userId, kind: 'v1' });
    await ApiToken.updateOne({ _id: expired.record._id }, { $set: { expiresAt: new Date(Date.now() - 1000) } });
    await authChanged(org.organizationId);
    expect((await refused(expired.token)).body).toEqual(currentError('invalid_token', 'Token expired'));
    expect((await refused(org.serviceToken)).body).toEqual(
      currentError('invalid_token', "Token must start with 'td_'")
    );
    expect((await refused('hello')).body).toEqual(currentError('invalid_token', "Token must start with 'td_'"));
    for (const body of [
      {},
      { token: 5 },
      { token: '' },
      { token: org.apiToken, extra: 1 },
      { token: 'x'.repeat(201) },
    ]) {
      const res = await stack.t.request.post('/api/session').send(body);
      expect(res.status).toBe(400);
      expect(res.body.error.code).toBe('validation_failed');
    }
    const notJson = await stack.t.request.post('/api/session').set('Content-Type', 'application/json').send('{');
    expect(notJson.status).toBe(400);
    // A page of another site cannot sign a browser in (login CSRF).
    const foreign = await stack.t.request
      .post('/api/session')
      .set('Origin', 'https://evil.example')
      .send({ token: org.apiToken });
    expect(foreign.status).toBe(403);
    expect(foreign.headers['set-cookie']).toBeUndefined();
  });

  it('limits sign-in attempts per token hint and per client address: 429 with Retry-After', async () => {
    const org = await buildOrg();
    // Per token hint (its first characters): 3 in a window.
    const wrong = `${org.apiToken.slice(0, 7)}${'x'.repeat(36)}`;
    for (let i = 0; i < 3; i++) expect((await signIn(wrong)).res.status).toBe(401);
    const limited = (await signIn(org.apiToken)).res; // the same hint
    expect(limited.status).toBe(429);
    expect(limited.body.error.code).toBe('rate_limited');
    expect(Number(limited.headers['retry-after'])).toBeGreaterThan(0);
    // Per client address: 6 in a window, whatever the token.
    const other = await buildOrg();
    expect((await signIn(other.apiToken)).res.status).toBe(200);
    expect((await signIn(`td_zz${'y'.repeat(38)}`)).res.status).toBe(401);
    const overAddress = (await signIn(other.apiToken)).res;
    expect(overAddress.status).toBe(429);
    expect(Number(overAddress.headers['retry-after'])).toBeGreaterThan(0);
  });
});

describe('the cookie on both surfaces', () => {
  it('acts as the token’s user on a v1 route and a current route; sends a chat message and streams its reply with the cookie alone', async () => {
    const org = await buildOrg();
    const { cookie } = await signIn(org.apiToken);
    const as = asCookie(stack.t, cookie, stack.base);
    const v1 = await as.get('/api/v1/agents');
    expect(v1.status).toBe(200);
    expect(v1.body).toMatchObject({ success: true, total: 0 });
    // A current-surface route: the user's permissions, no scope restriction (the current surface's budget applies).
    const created = await as.post('/api/agents', { name: 'Chatty', system_prompt: 'Be brief.' });
    expect(created.status).toBe(201);
    expect(created.headers['ratelimit-limit']).toBeDefined();
    const listed = await as.get('/api/agents');
    expect(listed.status).toBe(200);
    expect(JSON.stringify(listed.body)).toContain(created.body.agent.id);
    // The same agent through the bearer token: the cookie acted as that user in that organization.
    const byToken = await stack.t.request.get('/api/v1/agents').set('Authorization', bearer(org.apiToken));
    expect(byToken.body.agents.map((a: { id: string }) => a.id)).toEqual([created.body.agent.id]);

    const chatId = created.body.agent.chat_id as string;
    const stream = await openSse(`${stack.base}/api/chats/${chatId}/events?lastEventId=0`, { headers: { cookie } });
    expect(stream.status).toBe(200);
    const sent = await as.post(`/api/chats/${chatId}/messages`, { message: 'hello' });
    expect(sent.status).toBe(201);
    await waitForEvent(stream, chatFinished);
    stream.close();
    const reply = stream.events.filter((e) => e.event === 'message.delta').map((e) => JSON.parse(e.data).text);
    expect(reply.join('')).not.toBe('');
    const lastId = stream.events.at(-1)!.id!;

    // The chat stream has no end: a client at its head gets only what comes next, never an event twice.
    const resumed = await openSse(`${stack.base}/api/chats/${chatId}/events`, {
      headers: { cookie, 'last-event-id': lastId },
    });
    expect(resumed.status).toBe(200);
    expect((await as.post(`/api/chats/${chatId}/messages`, { message: 'again' })).status).toBe(201);
    await waitForEvent(resumed, chatFinished);
    resumed.close();
    expect(resumed.events.every((e) => Number(e.id) > Number(lastId))).toBe(true);
    expect(new Set(resumed.events.map((e) => e.id)).size).toBe(resumed.events.length);
  });

  it('CSRF: a cookie request that changes something needs an Origin naming the service; bearer requests do not', async () => {
    const org = await buildOrg();
    const { cookie } = await signIn(org.apiToken);
    const count = async (): Promise<number> =>
      (await stack.t.request.get('/api/v1/agents').set('Authorization', bearer(org.apiToken))).body.total;
    const body = { name: 'Forged', system_prompt: 'p' };

    const none = await asCookie(stack.t, cookie).post('/api/agents', body);
    expect(none.status).toBe(403);
    expect(none.body.error.code).toBe('csrf_rejected');
    expect(none.body.error.message).toMatch(/CSRF/);
    const evil = await asCookie(stack.t, cookie, 'https://evil.example').post('/api/agents', body);
    expect(evil.status).toBe(403);
    const v1 = await asCookie(stack.t, cookie).post('/api/v1/agents', { name: 'Forged', systemPrompt: 'p' });
    expect(v1.body).toEqual(v1Error(403, 'Forbidden', expect.stringMatching(/CSRF/) as unknown as string));
    const nullOrigin = await asCookie(stack.t, cookie, 'null').del('/api/v1/agents/agt_none');
    expect(nullOrigin.status).toBe(403);
    expect(await count()).toBe(0);

    const right = await asCookie(stack.t, cookie, stack.base).post('/api/agents', body);
    expect(right.status).toBe(201);
    const rightV1 = await asCookie(stack.t, cookie, stack.base).post('/api/v1/agents', {
      name: 'Mine',
      systemPrompt: 'p',
    });
    expect(rightV1.status).toBeLessThan(300);
    // A bearer request carries no Origin and is not a cookie request: unaffected.
    const byBearer = await stack.t.request
      .post('/api/agents')
      .set('Authorization', bearer(org.serviceToken))
      .send(body);
    expect(byBearer.status).toBe(201);
    expect(await count()).toBe(3);
  });

  it('sign-out ends the session at once: 204, the cookie cleared, then 401 everywhere; it is idempotent', async () => {
    const org = await buildOrg();
    const { cookie, secret } = await signIn(org.apiToken);
    // Without the page's Origin, sign-out is refused too (logout CSRF): the session lives on.
    expect((await asCookie(stack.t, cookie).del('/api/session')).status).toBe(403);
    expect((await asCookie(stack.t, cookie).get('/api/session')).status).toBe(200);

    const out = await asCookie(stack.t, cookie, stack.base).del('/api/session');
    expect(out.status).toBe(204);
    expect((out.headers['set-cookie'] as unknown as string[])[0]).toMatch(
      /^aas_session=; Max-Age=0; Expires=Thu, 01 Jan 1970 00:00:00 GMT; Path=\/; HttpOnly; SameSite=Strict$/
    );
    expect(await ConsoleSession.findById(sha256Hex(secret)).lean()).toBeNull();
    expect((await asCookie(stack.t, cookie).get('/api/session')).body).toEqual(
      currentError('invalid_token', 'Session expired or signed out')
    );
    expect((await asCookie(stack.t, cookie).get('/api/v1/agents')).body).toEqual(
      v1Error(401, 'Unauthorized', 'Session expired or signed out')
    );
    expect((await asCookie(stack.t, cookie).get('/api/agents')).status).toBe(401);
    expect((await asCookie(stack.t, cookie, stack.base).del('/api/session')).status).toBe(204);
    expect((await stack.t.request.delete('/api/session')).status).toBe(204);
  });

  it('revoking the token ends its sessions at once; so does leaving the organization', async () => {
    const org = await buildOrg();
    const { cookie } = await signIn(org.apiToken);
    const as = asCookie(stack.t, cookie, stack.base);
    const keys = await as.get('/api/v1/keys');
    const key = keys.body.keys.find((k: { hint: string }) => org.apiToken.startsWith(k.hint));
    // The console's settings page revokes the token it signed in with.
    expect((await as.del(`/api/v1/keys/${key.id}`)).status).toBe(200);
    expect((await as.get('/api/session')).status).toBe(401);
    expect((await as.get('/api/agents')).status).toBe(401);
    expect((await as.get('/api/v1/agents')).status).toBe(401);

    const member = await buildMember(org.organizationId);
    const signedIn = await signIn(member.apiToken);
    expect((await asCookie(stack.t, signedIn.cookie).get('/api/v1/agents')).status).toBe(200);
    await Membership.deleteOne({ organizationId: org.organizationId, userId: member.userId });
    await authChanged(org.organizationId);
    expect((await asCookie(stack.t, signedIn.cookie).get('/api/session')).status).toBe(401);
    expect((await asCookie(stack.t, signedIn.cookie).get('/api/v1/agents')).status).toBe(401);
  });

  it('the MCP endpoint does not take the cookie', async () => {
    const org = await buildOrg();
    const { cookie } = await signIn(org.apiToken);
    const init = { jsonrpc: '2.0', id: 1, method: 'initialize', params: {} };
    const post = await fetch(`${stack.base}/mcp`, {
      method: 'POST',
      headers: {
        cookie,
        origin: stack.base,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
      },
      body: JSON.stringify(init),
    });
    expect(post.status).toBe(401);
    const del = await fetch(`${stack.base}/mcp`, {
      method: 'DELETE',
      headers: { cookie, origin: stack.base, 'mcp-session-id': 'mcps_none' },
    });
    expect(del.status).toBe(401);
  });
});

describe('lifetime (SESSION_IDLE_TIMEOUT 2s, SESSION_MAX_AGE 6s)', () => {
  it('an unused session ends after the idle timeout; a used one lives on until its absolute lifetime', async () => {
    const org = await buildOrg();
    const used = await signIn(org.apiToken, short);
    const unused = await signIn(org.apiToken, short);
    expect(used.res.status).toBe(200);
    expect(new Date(used.res.body.idleExpiresAt).getTime()).toBeLessThan(new Date(used.res.body.expiresAt).getTime());
    const get = (s: SignedIn) => asCookie(short, s.cookie).get('/api/session');
    // Used four times a second for longer than the idle timeout: alive; the unused one then is not.
    const usedUntil = Date.now() + 3000;
    while (Date.now() < usedUntil) {
      expect((await get(used)).status).toBe(200);
      await new Promise((r) => setTimeout(r, 250));
    }
    expect((await get(unused)).body).toEqual(currentError('invalid_token', 'Session expired or signed out'));
    // Still used as often, the session ends at its absolute lifetime.
    let status = 200;
    const deadline = Date.now() + 30_000;
    while (status === 200 && Date.now() < deadline) {
      status = (await get(used)).status;
      if (status === 200) await new Promise((r) => setTimeout(r, 250));
    }
    expect(status).toBe(401);
    const doc = await ConsoleSession.findById(sha256Hex(used.secret)).lean();
    expect(doc!.lastSeenAt.getTime()).toBeGreaterThan(doc!.createdAt.getTime());
  });
});
