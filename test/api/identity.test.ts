/**
 * Identity-provider ID tokens on the client-library endpoints (lib/oidc.ts, commands/identity.ts,
 * api/middlewares/auth.ts), against a real OpenID Connect provider (`oidc-provider` on loopback with its own keys:
 * test/helpers/oidcProvider.ts): a token the provider minted in a code flow, mapped by a verified email in a verified
 * domain; expired, wrong-audience, wrong-issuer, unknown-key and symmetric-algorithm tokens refused with a code each;
 * the provider's key rotation followed; mapping by an identity link; unmapped identities and another organization's
 * data refused without saying what exists; personal tokens still accepted.
 */
import { randomBytes } from 'node:crypto';
import { SignJWT } from 'jose';
import { addIdentityDomain, linkIdentity } from '../../commands/identity';
import { createToken } from '../../commands/tokens';
import { Membership, User } from '../../models';
import { useServedTestApp } from '../helpers/app';
import { bearer, buildOrg } from '../helpers/factories';
import { useTestDatabase } from '../helpers/mongo';
import { newKey, startTestIdp, type TestIdp } from '../helpers/oidcProvider';
import { closeAfterAll } from '../helpers/teardown';

useTestDatabase();
const CLIENT = 'aas-client-library';
const CLIENT_REDIRECT = 'http://127.0.0.1:9/callback';
let idp: TestIdp;
beforeAll(async () => {
  idp = await startTestIdp([
    {
      client_id: CLIENT,
      token_endpoint_auth_method: 'none',
      redirect_uris: [CLIENT_REDIRECT],
      grant_types: ['authorization_code'],
      response_types: ['code'],
    },
  ]);
});
closeAfterAll(() => idp?.close());
const app = useServedTestApp(
  () => ({
    OIDC_ISSUERS: JSON.stringify([{ issuer: idp.issuer, audience: CLIENT }]),
    // A token naming a key not yet seen fetches the JWKS again at once (the default waits 30 s between fetches).
    OIDC_JWKS_COOLDOWN: '0s',
  }),
  { appUrl: true }
);

const rand = (): string => randomBytes(4).toString('hex');

/** A member of `organizationId` with the email `<name>@<domain>`. */
async function member(organizationId: string, email: string): Promise<string> {
  const user = await User.create({ email, name: email.split('@')[0] });
  await Membership.create({ organizationId, userId: user._id, role: 'member' });
  return user._id;
}

/** An organization with a verified domain and a member in it. */
async function orgWithDomain(): Promise<{ orgId: string; domain: string; email: string; userId: string }> {
  const org = await buildOrg();
  const domain = `acme-${rand()}.test`;
  await addIdentityDomain({ organizationId: org.organizationId, domain });
  const email = `alice@${domain}`;
  return { orgId: org.organizationId, domain, email, userId: await member(org.organizationId, email) };
}

const usage = (orgId: string, token: string): Promise<Response> =>
  fetch(`${app.base}/api/usage/organization/${orgId}`, { headers: { authorization: bearer(token) } });

async function refusal(res: Response): Promise<{ status: number; code: string }> {
  const body = (await res.json()) as { error: { code: string } };
  return { status: res.status, code: body.error.code };
}

it('a provider-minted ID token of a verified email in a verified domain reaches its organization; personal tokens still work', async () => {
  const a = await orgWithDomain();
  const idToken = await idp.idTokenByFlow(CLIENT, CLIENT_REDIRECT, a.email);
  const res = await usage(a.orgId, idToken);
  expect(res.status).toBe(200);
  expect(await res.json()).toMatchObject({ success: true });
  // The environment endpoints of a space too (the user's permissions, as a personal token).
  const { token: personal } = await createToken({ organizationId: a.orgId, userId: a.userId, kind: 'v1' });
  const space = await fetch(`${app.base}/api/v1/spaces`, {
    method: 'POST',
    headers: { authorization: bearer(personal), 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'Mine' }),
  });
  expect(space.status).toBe(200);
  const spaceId = ((await space.json()) as { space: { id: string } }).space.id;
  const env = await fetch(`${app.base}/api/spaces/${spaceId}/environment`, {
    headers: { authorization: bearer(idToken) },
  });
  expect(env.status).toBe(200);
  expect((await usage(a.orgId, personal)).status).toBe(200);

  // Another organization's data: not found, as for any token of this organization.
  const b = await orgWithDomain();
  expect((await usage(b.orgId, idToken)).status).toBe(404);
  const bToken = await idp.sign({ sub: `b-${rand()}`, aud: CLIENT, email: b.email, email_verified: true });
  expect((await usage(b.orgId, bToken)).status).toBe(200);
  const foreign = await fetch(`${app.base}/api/spaces/${spaceId}/environment`, {
    headers: { authorization: bearer(bToken) },
  });
  expect(foreign.status).toBe(404);
});

it('refuses expired, wrong-audience, wrong-issuer, unknown-key and symmetric tokens: 401 with a code each', async () => {
  const a = await orgWithDomain();
  const now = Math.floor(Date.now() / 1000);
  const claims = { sub: `s-${rand()}`, aud: CLIENT, email: a.email, email_verified: true };
  const stranger = await newKey();
  const hs256 = await new SignJWT({ ...claims, iss: idp.issuer, iat: now, exp: now + 600 })
    .setProtectedHeader({ alg: 'HS256', kid: idp.keys[0].kid })
    .sign(new TextEncoder().encode('a shared secret of at least 32 bytes!!'));
  const cases: Record<string, string> = {
    id_token_expired: await idp.sign({ ...claims, iat: now - 7200, exp: now - 3600 }),
    id_token_audience: await idp.sign({ ...claims, aud: 'another-client' }),
    id_token_issuer: await idp.sign({ ...claims, iss: 'https://idp.elsewhere.test' }),
    id_token_unknown_key: await idp.sign(claims, stranger),
    id_token_invalid: hs256,
  };
  for (const [code, token] of Object.entries(cases)) {
    const res = await usage(a.orgId, token);
    expect({ code, answer: await refusal(res) }).toEqual({ code, answer: { status: 401, code } });
    expect(res.headers.get('www-authenticate')).toContain('invalid_token');
  }
  // The same claims, well signed: accepted.
  expect((await usage(a.orgId, await idp.sign(claims))).status).toBe(200);
});

it("follows the provider's key rotation: a token of its new key verifies, the old key's too", async () => {
  const a = await orgWithDomain();
  const claims = { sub: `r-${rand()}`, aud: CLIENT, email: a.email, email_verified: true };
  const old = idp.keys[0];
  expect((await usage(a.orgId, await idp.sign(claims, old))).status).toBe(200);
  const rotated = await idp.rotate();
  expect((await usage(a.orgId, await idp.sign(claims, rotated))).status).toBe(200);
  expect((await usage(a.orgId, await idp.sign(claims, old))).status).toBe(200);
  // A provider-minted token after the rotation (signed with its new key).
  const minted = await idp.idTokenByFlow(CLIENT, CLIENT_REDIRECT, a.email);
  expect(JSON.parse(Buffer.from(minted.split('.')[0], 'base64url').toString()).kid).toBe(rotated.kid);
  expect((await usage(a.orgId, minted)).status).toBe(200);
});

it('maps by identity link first; unmapped, unverified and other-organization identities are 401 identity_unmapped', async () => {
  const a = await orgWithDomain();
  const b = await orgWithDomain();
  // An opaque subject linked by the admin CLI's command to a member of a.
  const subject = `opaque-${rand()}`;
  await linkIdentity({ issuer: idp.issuer, subject, userId: a.userId });
  const linked = await idp.sign({ sub: subject, aud: CLIENT });
  expect((await usage(a.orgId, linked)).status).toBe(200);
  expect((await usage(b.orgId, linked)).status).toBe(404);

  const unmapped = {
    'no link, no email': await idp.sign({ sub: `n-${rand()}`, aud: CLIENT }),
    'an email not verified': await idp.sign({ sub: `u-${rand()}`, aud: CLIENT, email: a.email, email_verified: false }),
    'a domain no one verified': await idp.sign({
      sub: `d-${rand()}`,
      aud: CLIENT,
      email: `alice@unverified-${rand()}.test`,
      email_verified: true,
    }),
    'a verified domain, no such member': await idp.sign({
      sub: `m-${rand()}`,
      aud: CLIENT,
      email: `nobody@${a.domain}`,
      email_verified: true,
    }),
  };
  // A member of b whose email is in a's domain: a's domain maps to a, where they are no member.
  const crossEmail = `carol@${a.domain}`;
  await member(b.orgId, crossEmail);
  const cross = await idp.sign({ sub: `c-${rand()}`, aud: CLIENT, email: crossEmail, email_verified: true });
  for (const [why, token] of Object.entries({ ...unmapped, 'a member of another organization': cross })) {
    for (const orgId of [a.orgId, b.orgId]) {
      const res = await usage(orgId, token);
      const answer = await refusal(res);
      expect({ why, answer }).toEqual({ why, answer: { status: 401, code: 'identity_unmapped' } });
    }
  }
  // A domain is verified by one organization at most.
  await expect(addIdentityDomain({ organizationId: b.orgId, domain: a.domain })).rejects.toThrow(
    /another organization/
  );
});
