import { useTestApp } from '../helpers/app';
import { childTestEnv } from '../helpers/env';
import { bearer } from '../helpers/factories';
import { useTestDatabase } from '../helpers/mongo';
import { runScript } from '../helpers/processes';

const db = useTestDatabase();
const t = useTestApp();

const admin = (...args: string[]): ReturnType<typeof runScript> =>
  runScript('scripts/admin.ts', args, childTestEnv({ MONGODB_URI: db.uri }));

describe('admin CLI', () => {
  let boot: { organizationId: string; userId: string; apiToken: string; serviceToken: string };

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
    const res = admin(
      'token',
      'create',
      '--org',
      boot.organizationId,
      '--user',
      boot.userId,
      '--kind',
      'service',
      '--scopes',
      'agents:read,jobs:read',
      '--expires-in',
      '2s'
    );
    expect(res.status).toBe(0);
    const out = JSON.parse(res.stdout.trim());
    expect(Object.keys(out).sort()).toEqual(['expiresAt', 'scopes', 'token']);
    expect(out.token).toMatch(/^svc_/);
    expect(out.scopes).toEqual(['agents:read', 'jobs:read']);
    expect(new Date(out.expiresAt).getTime() - Date.now()).toBeLessThanOrEqual(2000);

    const v1 = JSON.parse(admin('token', 'create', '--org', boot.organizationId, '--user', boot.userId).stdout.trim());
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

  it('an expiring v1 token answers Token expired after --expires-in', async () => {
    const out = JSON.parse(
      admin('token', 'create', '--org', boot.organizationId, '--user', boot.userId, '--expires-in', '1s').stdout.trim()
    );
    await new Promise((r) => setTimeout(r, Math.max(0, new Date(out.expiresAt).getTime() - Date.now()) + 50));
    const res = await t.request.get('/api/v1/profile').set('Authorization', bearer(out.token));
    expect(res.status).toBe(401);
    expect(res.body.message).toBe('Token expired');
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

  it('usage errors exit 2 with one clear line and the usage', () => {
    const cases: string[][] = [
      ['bootstrap', '--org', 'X'],
      ['rate-limit', 'set', '--org', 'o', '--user', 'u', '--limit', '0'],
      ['rate-limit', 'set', '--org', 'o', '--user', 'u'],
      ['token', 'create', '--org', 'o', '--user', 'u', '--kind', 'root'],
      ['token', 'create', '--org', 'o', '--user', 'u', '--expires-in', 'soon'],
      ['frobnicate'],
    ];
    for (const args of cases) {
      const res = admin(...args);
      expect(res.status).toBe(2);
      expect(res.stderr.split('\n')[0]).toMatch(/^admin: /);
      expect(res.stdout).toBe('');
    }
  });

  it('a bad reference exits 1 with one line', () => {
    const res = admin('token', 'create', '--org', 'org_missing', '--user', boot.userId);
    expect(res.status).toBe(1);
    expect(res.stderr.trim()).toBe('admin: User is not a member of this organization');
    const scope = admin(
      'token',
      'create',
      '--org',
      boot.organizationId,
      '--user',
      boot.userId,
      '--kind',
      'service',
      '--scopes',
      'root'
    );
    expect(scope.status).toBe(1);
    expect(scope.stderr).toMatch(/^admin: Unknown scope: root/);
  });
});
