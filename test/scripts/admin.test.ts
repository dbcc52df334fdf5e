import { declaredIndexes } from '../../lib/indexes';
import { IdentityDomain, IdentityLink, Membership, Organization } from '../../models';
import { SEARCH_ATTRIBUTES } from '../../workflows/searchAttributes';
import { useTestApp } from '../helpers/app';
import { childTestEnv } from '../helpers/env';
import { bearer } from '../helpers/factories';
import { useTestDatabase } from '../helpers/mongo';
import { runScript } from '../helpers/processes';

const db = useTestDatabase();
const t = useTestApp();

/** Each command is a process of its own (a few seconds each on a busy machine). */
const admin = (...args: string[]): ReturnType<typeof runScript> =>
  runScript('scripts/admin.ts', args, childTestEnv({ MONGODB_URI: db.uri }));

describe('admin CLI', () => {
  let boot: { organizationId: string; userId: string; apiToken: string; serviceToken: string };
  /** `token create` for the bootstrapped member, with more arguments. */
  const tokenCreate = (...args: string[]): ReturnType<typeof runScript> =>
    admin('token', 'create', '--org', boot.organizationId, '--user', boot.userId, ...args);

  it('bootstrap prints one JSON line whose tokens authenticate', async () => {
    const res = admin('bootstrap', '--org', 'CLI Org', '--email', 'ops@example.com');
    expect(res.status).toBe(0);
    const lines = res.stdout.trim().split('\n');
    expect(lines).toHaveLength(1);
    boot = JSON.parse(lines[0]);
    expect(Object.keys(boot).sort()).toEqual(['apiToken', 'organizationId', 'serviceToken', 'userId']);
    expect(boot.organizationId).toMatch(/^org_/);
    expect(boot.userId).toMatch(/^usr_/);
    expect(boot.apiToken).toMatch(/^td_[A-Za-z0-9]{40}$/);
    expect(boot.serviceToken).toMatch(/^svc_[A-Za-z0-9]{40}$/);
    const profile = await t.request.get('/api/v1/profile').set('Authorization', bearer(boot.apiToken));
    expect(profile.status).toBe(200);
    expect(profile.body.organization.name).toBe('CLI Org');
  });

  it('token create prints {token,scopes,expiresAt}; the token expires; token revoke revokes', async () => {
    const res = tokenCreate('--kind', 'service', '--scopes', 'agents:read,jobs:read', '--expires-in', '2s');
    expect([res.status, res.stderr]).toEqual([0, '']);
    const out = JSON.parse(res.stdout.trim());
    expect(Object.keys(out).sort()).toEqual(['expiresAt', 'scopes', 'token']);
    expect(out.token).toMatch(/^svc_/);
    expect(out.scopes).toEqual(['agents:read', 'jobs:read']);
    expect(new Date(out.expiresAt).getTime() - Date.now()).toBeLessThanOrEqual(2000);

    const v1 = JSON.parse(tokenCreate().stdout.trim());
    expect(v1.token).toMatch(/^td_/);
    expect(v1.scopes).toEqual([]);
    expect(v1.expiresAt).toBeNull();
    expect((await t.request.get('/api/v1/profile').set('Authorization', bearer(v1.token))).status).toBe(200);

    const revoked = admin('token', 'revoke', '--org', boot.organizationId, '--token', v1.token);
    expect(revoked.status).toBe(0);
    expect(JSON.parse(revoked.stdout.trim()).revoked).toMatch(/^tok_/);
    const after = await t.request.get('/api/v1/profile').set('Authorization', bearer(v1.token));
    expect(after.status).toBe(401);
    expect(after.body.message).toBe('Invalid or expired token');
  });

  it('--scopes without --kind makes a service token; --kind v1 with --scopes is a usage error', async () => {
    const res = tokenCreate('--scopes', 'agents:read');
    expect({ status: res.status, stderr: res.stderr }).toEqual({ status: 0, stderr: '' });
    const out = JSON.parse(res.stdout.trim());
    expect(out.token).toMatch(/^svc_/);
    expect(out.scopes).toEqual(['agents:read']);
    expect((await t.request.get('/api/agents').set('Authorization', bearer(out.token))).status).toBe(200);

    const v1 = tokenCreate('--kind', 'v1', '--scopes', 'agents:read');
    expect(v1.status).toBe(2);
    expect(v1.stderr).toMatch(/^admin: --scopes applies to service tokens \(--kind service\)/);
  }, 120_000);

  it('an expiring v1 token answers Token expired after --expires-in', async () => {
    const out = JSON.parse(tokenCreate('--expires-in', '1s').stdout.trim());
    await new Promise((r) => setTimeout(r, Math.max(0, new Date(out.expiresAt).getTime() - Date.now()) + 50));
    const res = await t.request.get('/api/v1/profile').set('Authorization', bearer(out.token));
    expect(res.status).toBe(401);
    expect(res.body.message).toBe('Token expired');
  });

  it('share set gives an organization its fairness weight; default clears it; a bad weight is a usage error', async () => {
    const set = admin('share', 'set', '--org', boot.organizationId, '--weight', '2.5');
    expect(set.status).toBe(0);
    expect(JSON.parse(set.stdout.trim())).toEqual({ organizationId: boot.organizationId, weight: 2.5 });
    expect((await Organization.findById(boot.organizationId).lean())?.fairnessWeight).toBe(2.5);
    const cleared = admin('share', 'set', '--org', boot.organizationId, '--weight', 'default');
    expect(JSON.parse(cleared.stdout.trim()).weight).toBe(1);
    expect((await Organization.findById(boot.organizationId).lean())?.fairnessWeight).toBeUndefined();
    expect(admin('share', 'set', '--org', boot.organizationId, '--weight', '0').status).toBe(2);
    expect(admin('share', 'set', '--org', 'org_missing', '--weight', '3').status).toBe(1);
  });

  it('rate-limit set gives an identity its own limit on the current surface; default clears it', async () => {
    const set = admin('rate-limit', 'set', '--org', boot.organizationId, '--user', boot.userId, '--limit', '5000');
    expect(set.status).toBe(0);
    expect(JSON.parse(set.stdout.trim())).toEqual({
      organizationId: boot.organizationId,
      userId: boot.userId,
      rateLimit: 5000,
    });
    const res = await t.request.get('/api/agents').set('Authorization', bearer(boot.serviceToken));
    expect(res.status).toBe(200);
    expect(res.headers['x-ratelimit-limit']).toBe('5000');
    expect(res.headers['ratelimit-limit']).toBe('5000');
    expect(res.headers['ratelimit-policy']).toBe('5000;w=60');
    const cleared = admin(
      'rate-limit',
      'set',
      '--org',
      boot.organizationId,
      '--user',
      boot.userId,
      '--limit',
      'default'
    );
    expect(JSON.parse(cleared.stdout.trim()).rateLimit).toBeNull();
    const after = await t.request.get('/api/agents').set('Authorization', bearer(boot.serviceToken));
    expect(after.headers['ratelimit-policy']).toBe('900;w=60');
  });

  it('member add puts a user (new or existing) in an organization with a role; their token then works', async () => {
    const added = admin('member', 'add', '--org', boot.organizationId, '--email', 'New.Person@Example.com');
    expect(added.status).toBe(0);
    const member = JSON.parse(added.stdout.trim());
    expect(member).toEqual({
      organizationId: boot.organizationId,
      userId: expect.stringMatching(/^usr_/),
      role: 'member',
      created: true,
    });
    const token = JSON.parse(
      admin('token', 'create', '--org', boot.organizationId, '--user', member.userId).stdout.trim()
    ).token;
    const profile = await t.request.get('/api/v1/profile').set('Authorization', bearer(token));
    expect(profile.status).toBe(200);
    expect(profile.body.organization.id).toBe(boot.organizationId);

    // Again, as an admin: the same user and membership, with the new role (idempotent).
    const again = admin('member', 'add', '--org', boot.organizationId, '--email', 'new.person@example.com');
    expect(JSON.parse(again.stdout.trim())).toEqual({ ...member, created: false });
    const promoted = admin(
      'member',
      'add',
      '--org',
      boot.organizationId,
      '--email',
      'new.person@example.com',
      '--role',
      'admin'
    );
    expect(JSON.parse(promoted.stdout.trim())).toEqual({ ...member, role: 'admin', created: false });
    expect(await Membership.countDocuments({ organizationId: boot.organizationId, userId: member.userId })).toBe(1);
    expect((await Membership.findOne({ userId: member.userId }).lean())?.role).toBe('admin');

    const missing = admin('member', 'add', '--org', 'org_missing', '--email', 'x@example.com');
    expect(missing.status).toBe(1);
    expect(missing.stderr.trim()).toBe('admin: Organization not found');
  }, 120_000);

  it("token list shows an organization's tokens (or one member's), newest first, never a secret", () => {
    const created = JSON.parse(tokenCreate('--name', 'listed').stdout.trim());
    const revokedId = JSON.parse(
      admin('token', 'revoke', '--org', boot.organizationId, '--token', created.token).stdout.trim()
    ).revoked;
    const res = admin('token', 'list', '--org', boot.organizationId, '--user', boot.userId);
    expect(res.status).toBe(0);
    const { tokens } = JSON.parse(res.stdout.trim());
    expect(tokens[0]).toEqual({
      id: revokedId,
      kind: 'v1',
      name: 'listed',
      hint: created.token.slice(0, 7),
      userId: boot.userId,
      scopes: [],
      createdAt: expect.any(String),
      expiresAt: null,
      revokedAt: expect.any(String),
      lastUsedAt: null,
    });
    const times = tokens.map((k: { createdAt: string }) => Date.parse(k.createdAt));
    expect(times).toEqual([...times].sort((a, b) => b - a));
    expect(tokens.map((k: { kind: string }) => k.kind)).toEqual(expect.arrayContaining(['v1', 'service']));
    expect(res.stdout).not.toContain(created.token);
    expect(res.stdout).not.toContain('hash');
    // The whole organization holds the other member's tokens too.
    const all = JSON.parse(admin('token', 'list', '--org', boot.organizationId).stdout.trim()).tokens;
    expect(all.length).toBeGreaterThan(tokens.length);
    expect(JSON.parse(admin('token', 'list', '--org', 'org_none').stdout.trim())).toEqual({ tokens: [] });
  }, 120_000);

  it('check reaches MongoDB and the Temporal namespace with the configured settings, or says why not', () => {
    const ok = admin('check');
    expect(ok.status).toBe(0);
    // The file's database was connected as development does (every index built), the dev server registers the
    // search attributes: nothing is missing (test/scripts/migrate.test.ts: when something is).
    expect(JSON.parse(ok.stdout.trim())).toEqual({
      mongodb: { ok: true, indexes: declaredIndexes().length },
      temporal: {
        address: process.env.TEMPORAL_ADDRESS,
        namespace: 'default',
        security: 'plaintext',
        apiKey: false,
        searchAttributes: Object.keys(SEARCH_ATTRIBUTES),
      },
    });
    const down = runScript(
      'scripts/admin.ts',
      ['check'],
      childTestEnv({ MONGODB_URI: db.uri, TEMPORAL_ADDRESS: '127.0.0.1:1', DEPENDENCY_TIMEOUT_MS: '500' })
    );
    expect(down.status).toBe(1);
    expect(down.stderr).toMatch(/^admin: cannot connect to Temporal at 127\.0\.0\.1:1 \(plaintext\): /);
  }, 120_000);

  it("link-identity and domain add / remove record what maps an identity provider's tokens to members", async () => {
    const issuer = 'https://login.example.com';
    const linked = admin('link-identity', '--issuer', issuer, '--subject', '00u1abcd', '--user', boot.userId);
    expect([linked.status, linked.stderr]).toEqual([0, '']);
    expect(JSON.parse(linked.stdout.trim())).toEqual({
      issuer,
      subject: '00u1abcd',
      userId: boot.userId,
      organizationId: boot.organizationId,
    });
    expect(await IdentityLink.countDocuments({ issuer, subject: '00u1abcd', userId: boot.userId })).toBe(1);
    const unlinked = admin('unlink-identity', '--issuer', issuer, '--subject', '00u1abcd');
    expect(JSON.parse(unlinked.stdout.trim())).toEqual({ removed: true });

    const added = admin('domain', 'add', '--org', boot.organizationId, '--domain', 'Example.COM', '--issuer', issuer);
    expect([added.status, added.stderr]).toEqual([0, '']);
    expect(JSON.parse(added.stdout.trim())).toEqual({
      domain: 'example.com',
      organizationId: boot.organizationId,
      issuer,
    });
    const other = JSON.parse(admin('bootstrap', '--org', 'Other', '--email', 'other@example.org').stdout.trim());
    const taken = admin('domain', 'add', '--org', other.organizationId, '--domain', 'example.com');
    expect([taken.status, taken.stderr.trim()]).toEqual([1, 'admin: example.com is verified by another organization']);
    const bad = admin('domain', 'add', '--org', boot.organizationId, '--domain', 'not a domain');
    expect([bad.status, bad.stderr.trim()]).toEqual([
      1,
      'admin: not a domain is not a domain name such as example.com',
    ]);
    const removed = admin('domain', 'remove', '--org', boot.organizationId, '--domain', 'example.com');
    expect(JSON.parse(removed.stdout.trim())).toEqual({ removed: true });
    expect(await IdentityDomain.countDocuments({})).toBe(0);
    const stranger = admin('link-identity', '--issuer', issuer, '--subject', 's', '--user', 'usr_missing');
    expect([stranger.status, stranger.stderr.trim()]).toEqual([1, 'admin: User is not a member of this organization']);
  }, 120_000);

  it('usage errors exit 2 with one clear line and the usage', () => {
    const cases: string[][] = [
      ['bootstrap', '--org', 'X'],
      ['rate-limit', 'set', '--org', 'o', '--user', 'u', '--limit', '0'],
      ['rate-limit', 'set', '--org', 'o', '--user', 'u'],
      ['token', 'create', '--org', 'o', '--user', 'u', '--kind', 'root'],
      ['token', 'create', '--org', 'o', '--user', 'u', '--expires-in', 'soon'],
      ['token', 'list'],
      ['member', 'add', '--org', 'o'],
      ['member', 'add', '--org', 'o', '--email', 'x@example.com', '--role', 'root'],
      ['link-identity', '--issuer', 'https://login.example.com', '--user', 'u'],
      ['domain', 'add', '--org', 'o'],
      ['frobnicate'],
    ];
    for (const args of cases) {
      const res = admin(...args);
      expect(res.status).toBe(2);
      expect(res.stderr.split('\n')[0]).toMatch(/^admin: /);
      expect(res.stdout).toBe('');
    }
  }, 120_000);

  it('a bad reference exits 1 with one line', () => {
    const res = admin('token', 'create', '--org', 'org_missing', '--user', boot.userId);
    expect(res.status).toBe(1);
    expect(res.stderr.trim()).toBe('admin: User is not a member of this organization');
    const scope = tokenCreate('--kind', 'service', '--scopes', 'root');
    expect(scope.status).toBe(1);
    expect(scope.stderr).toMatch(/^admin: Unknown scope: root/);
  });
});
