import Router from '@koa/router';
import Koa from 'koa';
import supertest from 'supertest';
import { authenticate, requireScope } from '../../api/middlewares/auth';
import { errorHandler } from '../../api/middlewares/errors';
import { requestId } from '../../api/middlewares/requestId';
import type { AppState } from '../../api/context';
import { createToken, revokeToken } from '../../commands/tokens';
import { ApiToken, Membership } from '../../models';
import { useTestApp } from '../helpers/app';
import { testLogger } from '../helpers/env';
import { bearer, buildMember, buildOrg, buildServiceToken } from '../helpers/factories';
import { useTestDatabase } from '../helpers/mongo';

useTestDatabase();
const t = useTestApp();

const v1Error = (statusCode: number, statusMessage: string, message: string): object => ({
  error: true,
  statusCode,
  statusMessage,
  message,
});

describe('v1 authentication (GET /api/v1/profile)', () => {
  it('accepts a valid td_ token and answers with the caller', async () => {
    const org = await buildOrg({ org: 'Acme' });
    const res = await t.request.get('/api/v1/profile').set('Authorization', bearer(org.apiToken));
    expect(res.status).toBe(200);
    expect(res.body.success).toBe(true);
    expect(res.body.user.id).toBe(org.userId);
    expect(res.body.organization).toMatchObject({ id: org.organizationId, name: 'Acme', members: [org.userId] });
    expect(res.body.role).toBe('owner');
  });

  it('401 Authorization header required without a header', async () => {
    const res = await t.request.get('/api/v1/profile');
    expect(res.status).toBe(401);
    expect(res.body).toEqual(v1Error(401, 'Unauthorized', 'Authorization header required'));
    expect(res.headers['x-request-id']).toBeTruthy();
  });

  it("401 Token must start with 'td_' for another prefix (including a service token)", async () => {
    const org = await buildOrg();
    for (const token of ['abc123', org.serviceToken]) {
      const res = await t.request.get('/api/v1/profile').set('Authorization', bearer(token));
      expect(res.status).toBe(401);
      expect(res.body).toEqual(v1Error(401, 'Unauthorized', "Token must start with 'td_'"));
    }
  });

  it('401 Invalid or expired token for an unknown token or a non-Bearer header', async () => {
    for (const header of ['Bearer td_doesnotexist', 'Basic dXNlcjpwYXNz', 'Bearer']) {
      const res = await t.request.get('/api/v1/profile').set('Authorization', header);
      expect(res.status).toBe(401);
      expect(res.body).toEqual(v1Error(401, 'Unauthorized', 'Invalid or expired token'));
    }
  });

  it('401 Token expired once expiresAt has passed, also for a token this process has cached', async () => {
    const org = await buildOrg();
    const expiresAt = new Date(Date.now() + 1500);
    const { token } = await createToken({
      organizationId: org.organizationId,
      userId: org.userId,
      kind: 'v1',
      expiresAt,
    });
    expect((await t.request.get('/api/v1/profile').set('Authorization', bearer(token))).status).toBe(200);
    await new Promise((r) => setTimeout(r, Math.max(0, expiresAt.getTime() - Date.now()) + 20));
    const res = await t.request.get('/api/v1/profile').set('Authorization', bearer(token));
    expect(res.status).toBe(401);
    expect(res.body).toEqual(v1Error(401, 'Unauthorized', 'Token expired'));
  });

  it('401 Invalid or expired token after revocation', async () => {
    const org = await buildOrg();
    const { token, record } = await createToken({ organizationId: org.organizationId, userId: org.userId, kind: 'v1' });
    await revokeToken(org.organizationId, record._id);
    const res = await t.request.get('/api/v1/profile').set('Authorization', bearer(token));
    expect(res.status).toBe(401);
    expect(res.body.message).toBe('Invalid or expired token');
  });

  it('401 once the user is no longer a member of the organization', async () => {
    const org = await buildOrg();
    const member = await buildMember(org.organizationId);
    expect((await t.request.get('/api/v1/profile').set('Authorization', bearer(member.apiToken))).status).toBe(200);
    await Membership.deleteOne({ organizationId: org.organizationId, userId: member.userId });
    // Removed in the database directly, not through the service: seen once this process's cached token entry
    // expires (CACHE_TTL_MS, docs/decisions.md "Caches of read-mostly records").
    await new Promise((r) => setTimeout(r, t.config.cacheTtlMs + 20));
    const res = await t.request.get('/api/v1/profile').set('Authorization', bearer(member.apiToken));
    expect(res.status).toBe(401);
  });

  it('stores only a SHA-256 hash of the token and records last use', async () => {
    const org = await buildOrg();
    await t.request.get('/api/v1/profile').set('Authorization', bearer(org.apiToken));
    const records = await ApiToken.find({ organizationId: org.organizationId }).lean();
    const raw = JSON.stringify(records);
    expect(raw).not.toContain(org.apiToken);
    expect(raw).not.toContain(org.serviceToken);
    const v1 = records.find((r) => r.kind === 'v1');
    expect(v1?.hash).toMatch(/^[0-9a-f]{64}$/);
    // lastUsedAt is written asynchronously right after authentication
    for (let i = 0; i < 20; i++) {
      const again = await ApiToken.findById(v1?._id).lean();
      if (again?.lastUsedAt) return;
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error('lastUsedAt was not recorded');
  });

  it('keeps organizations apart: each token sees only its own organization', async () => {
    const a = await buildOrg({ org: 'A' });
    const b = await buildOrg({ org: 'B' });
    const ra = await t.request.get('/api/v1/profile').set('Authorization', bearer(a.apiToken));
    const rb = await t.request.get('/api/v1/profile').set('Authorization', bearer(b.apiToken));
    expect(ra.body.organization.id).toBe(a.organizationId);
    expect(rb.body.organization.id).toBe(b.organizationId);
    expect(ra.body.organization.members).not.toContain(b.userId);
  });
});

describe('current-surface authentication and scopes', () => {
  // The real middleware chain on a route requiring `agents:read`.
  const app = new Koa<AppState>();
  const router = new Router<AppState>();
  router.get('/api/scoped', authenticate('service'), requireScope('agents:read'), (ctx) => {
    ctx.body = { organizationId: ctx.state.auth.organizationId, scopes: ctx.state.auth.scopes };
  });
  app.use(requestId(testLogger()));
  app.use(errorHandler({ bodyLimitBytes: 1024 }));
  app.use(router.routes());
  const request = supertest(app.callback());

  it('accepts a service token carrying the scope, and `*`', async () => {
    const org = await buildOrg();
    const scoped = await buildServiceToken(org, ['agents:read']);
    const ok = await request.get('/api/scoped').set('Authorization', bearer(scoped));
    expect(ok.status).toBe(200);
    expect(ok.body).toEqual({ organizationId: org.organizationId, scopes: ['agents:read'] });
    const star = await request.get('/api/scoped').set('Authorization', bearer(org.serviceToken));
    expect(star.status).toBe(200);
  });

  it("403 You don't have permission to access this resource without the scope", async () => {
    const org = await buildOrg();
    const other = await buildServiceToken(org, ['jobs:read', 'chats:write']);
    const res = await request.get('/api/scoped').set('Authorization', bearer(other));
    expect(res.status).toBe(403);
    expect(res.body).toEqual({
      error: { code: 'forbidden', message: "You don't have permission to access this resource" },
    });
  });

  it('401 in the current envelope: missing, v1 token, expired', async () => {
    const org = await buildOrg();
    const missing = await request.get('/api/scoped');
    expect(missing.status).toBe(401);
    expect(missing.body).toEqual({ error: { code: 'unauthorized', message: 'Authorization header required' } });
    const v1 = await request.get('/api/scoped').set('Authorization', bearer(org.apiToken));
    expect(v1.body).toEqual({ error: { code: 'unauthorized', message: 'Invalid or expired token' } });
    const { token, record } = await createToken({
      organizationId: org.organizationId,
      userId: org.userId,
      kind: 'service',
      scopes: ['*'],
    });
    await ApiToken.updateOne({ _id: record._id }, { $set: { expiresAt: new Date(Date.now() - 1) } });
    const expired = await request.get('/api/scoped').set('Authorization', bearer(token));
    expect(expired.body).toEqual({ error: { code: 'unauthorized', message: 'Token expired' } });
  });

  it('refuses unknown scopes at creation', async () => {
    const org = await buildOrg();
    await expect(buildServiceToken(org, ['agents:delete'])).rejects.toThrow(/Unknown scope: agents:delete/);
  });
});
