/**
 * The console's "Sign in with SSO" over HTTP, as a browser would (api/current/sso.ts, commands/sso.ts), against a real
 * OpenID Connect provider on loopback (test/helpers/oidcProvider.ts) and api processes of their own: the api process
 * that started a sign-in is killed (SIGKILL) while the person is at the provider, and the one started in its place
 * finishes it (the login under way is in the database, not in a process); the callback is used once (a replay
 * signs no one in again); a callback without this browser's state cookie (login CSRF) signs no one in and leaves the
 * login to its own browser.
 */
import { randomBytes } from 'node:crypto';
import { addIdentityDomain } from '../../commands/identity';
import { SSO_CALLBACK_PATH } from '../../commands/sso';
import { freePort } from '../../scripts/servers/launch';
import { Membership, SsoLogin, User } from '../../models';
import { childTestEnv } from '../helpers/env';
import { buildOrg } from '../helpers/factories';
import { useTestDatabase } from '../helpers/mongo';
import { startTestIdp, type TestIdp } from '../helpers/oidcProvider';
import { spawnScript, type Spawned } from '../helpers/processes';
import { closeAfterAll } from '../helpers/teardown';

const db = useTestDatabase();
// api processes started and killed on a loaded 2-core machine: room for the test (no time is asserted).
jest.setTimeout(180_000);
const CLIENT = 'aas-console';
let idp: TestIdp;
let base: string;
let env: Record<string, string>;
let api: Spawned | undefined;

async function startApi(): Promise<void> {
  api = spawnScript('api/server.ts', childTestEnv(env));
  await api.waitFor(/api listening/, 90_000);
}

beforeAll(async () => {
  idp = await startTestIdp([]);
  const port = await freePort();
  base = `http://127.0.0.1:${port}`;
  await idp.setClients([
    {
      client_id: CLIENT,
      token_endpoint_auth_method: 'none',
      redirect_uris: [`${base}${SSO_CALLBACK_PATH}`],
      grant_types: ['authorization_code'],
      response_types: ['code'],
    },
  ]);
  env = {
    MONGODB_URI: db.uri,
    PORT: String(port),
    APP_URL: base,
    OIDC_ISSUERS: JSON.stringify([{ issuer: idp.issuer, audience: CLIENT }]),
    OIDC_CONSOLE_ISSUER: idp.issuer,
  };
  await startApi();
}, 120_000);
closeAfterAll(() => idp?.close());
afterAll(async () => {
  api?.child.kill('SIGTERM');
  await api?.exited();
});

/** The cookie `name`'s value among a response's `Set-Cookie` headers (empty when cleared), or undefined. */
function setCookie(res: Response, name: string): string | undefined {
  const line = res.headers.getSetCookie().find((c) => c.startsWith(`${name}=`));
  return line === undefined ? undefined : line.slice(name.length + 1).split(';')[0];
}

/** The console's sign-in page's link: the provider's authorization URL and this browser's state cookie. */
async function start(): Promise<{ authorization: string; state: string }> {
  const res = await fetch(`${base}/api/session/sso/start?next=%2Fchats`, { redirect: 'manual' });
  expect(res.status).toBe(302);
  const authorization = res.headers.get('location')!;
  expect(authorization.startsWith(`${idp.issuer}/`)).toBe(true);
  const params = new URL(authorization).searchParams;
  expect(params.get('code_challenge_method')).toBe('S256');
  expect(params.get('nonce')).toMatch(/^[A-Za-z0-9_-]{43}$/);
  const state = setCookie(res, 'aas_sso')!;
  expect(params.get('state')).toBe(state);
  expect(res.headers.getSetCookie().find((c) => c.startsWith('aas_sso='))).toMatch(/HttpOnly; SameSite=Lax/);
  return { authorization, state };
}

const callback = (url: string, state?: string): Promise<Response> =>
  fetch(url, { redirect: 'manual', headers: state ? { cookie: `aas_sso=${state}` } : {} });

async function member(): Promise<{ email: string; userId: string; orgId: string }> {
  const org = await buildOrg();
  const domain = `acme-${randomBytes(4).toString('hex')}.test`;
  await addIdentityDomain({ organizationId: org.organizationId, domain });
  const email = `alice@${domain}`;
  const user = await User.create({ email, name: 'Alice' });
  await Membership.create({ organizationId: org.organizationId, userId: user._id, role: 'member' });
  return { email, userId: user._id, orgId: org.organizationId };
}

it('a sign-in started on an api process killed meanwhile is finished by the next one, once', async () => {
  const alice = await member();
  const offer = await fetch(`${base}/api/session/sso`).then((r) => r.json());
  expect(offer).toEqual({ enabled: true, issuer: idp.issuer, startUrl: '/api/session/sso/start' });
  const { authorization, state } = await start();

  // The api process dies while the person is at the provider; another takes its place.
  api!.crash();
  await api!.exited();
  await startApi();

  const back = await idp.signInAt(authorization, alice.email);
  expect(back.startsWith(`${base}${SSO_CALLBACK_PATH}?`)).toBe(true);
  const res = await callback(back, state);
  expect([res.status, res.headers.get('location')]).toEqual([303, '/chats']);
  const session = setCookie(res, 'aas_session')!;
  expect(res.headers.getSetCookie().find((c) => c.startsWith('aas_session='))).toMatch(/HttpOnly; SameSite=Strict/);
  expect(setCookie(res, 'aas_sso')).toBe('');
  const who = await fetch(`${base}/api/session`, { headers: { cookie: `aas_session=${session}` } });
  expect(who.status).toBe(200);
  expect(await who.json()).toMatchObject({
    user: { id: alice.userId, email: alice.email },
    organization: { id: alice.orgId },
  });
  expect(await SsoLogin.countDocuments({})).toBe(0);

  // The same callback again (a replay): nothing is signed in twice.
  const replay = await callback(back, state);
  expect([replay.status, replay.headers.get('location')]).toEqual([303, '/sign-in?sso_error=expired']);
  expect(setCookie(replay, 'aas_session')).toBeUndefined();
});

it('a callback without the state cookie of the browser that started it signs no one in (login CSRF)', async () => {
  const alice = await member();
  const { authorization, state } = await start();
  const back = await idp.signInAt(authorization, alice.email);
  // Another browser (an attacker's page sending the victim there) has no state cookie, or another one.
  for (const cookie of [undefined, 'another-state']) {
    const res = await callback(back, cookie);
    expect([res.status, res.headers.get('location')]).toEqual([303, '/sign-in?sso_error=expired']);
    expect(setCookie(res, 'aas_session')).toBeUndefined();
  }
  // The browser that started it still finishes it.
  const own = await callback(back, state);
  expect([own.status, own.headers.get('location')]).toEqual([303, '/chats']);
  expect(setCookie(own, 'aas_session')).toBeDefined();
});
