/**
 * The current surface's rate limit: headers on every authenticated response, 429 with Retry-After over the
 * budget, one budget shared by every api instance (counted in the database), v1 not limited.
 */
import { RateWindow } from '../../../models';
import { createTestApp, useTestApp, type TestApp } from '../../helpers/app';
import { awayFromWindowEnd, currentError } from '../../helpers/current';
import { bearer, buildOrg, buildServiceToken } from '../../helpers/factories';
import { useTestDatabase } from '../../helpers/mongo';

useTestDatabase();
/** A small budget in a long window, so that no window boundary falls inside a test. */
const small = useTestApp({ RATE_LIMIT_REQUESTS: '5', RATE_LIMIT_WINDOW_SECONDS: '3600' });
const standard = useTestApp();

const get = (t: TestApp, token: string) => t.request.get('/api/agents').set('Authorization', bearer(token));

describe('rate limit on the current surface', () => {
  it('every authenticated response carries the headers; the request over the budget is 429 with Retry-After', async () => {
    await awayFromWindowEnd(3600, 30_000);
    const org = await buildOrg();
    const reset = Math.ceil((Math.floor(Date.now() / 3_600_000) + 1) * 3600);
    for (let i = 1; i <= 5; i++) {
      const res = await get(small, org.serviceToken);
      expect(res.status).toBe(200);
      expect(res.headers).toMatchObject({
        'x-ratelimit-limit': '5',
        'x-ratelimit-remaining': String(5 - i),
        'x-ratelimit-reset': String(reset),
        'ratelimit-limit': '5',
        'ratelimit-remaining': String(5 - i),
        'ratelimit-policy': '5;w=3600',
      });
      const resetIn = Number(res.headers['ratelimit-reset']);
      expect(resetIn).toBeGreaterThan(0);
      expect(resetIn).toBeLessThanOrEqual(3600);
    }
    const over = await get(small, org.serviceToken);
    expect(over.status).toBe(429);
    expect(over.body).toEqual(currentError('rate_limited', 'Too many requests'));
    expect(over.headers['retry-after']).toBe(over.headers['ratelimit-reset']);
    expect(over.headers['x-ratelimit-remaining']).toBe('0');
    expect(over.headers['ratelimit-policy']).toBe('5;w=3600');
    expect(over.headers['x-request-id']).toBeTruthy();
  });

  it('counts per identity: every token of one user shares the budget, another user has its own', async () => {
    await awayFromWindowEnd(3600, 30_000);
    const org = await buildOrg();
    const second = await buildServiceToken(org, ['agents:read']);
    for (let i = 0; i < 3; i++) await get(small, org.serviceToken);
    for (let i = 0; i < 2; i++) expect((await get(small, second)).status).toBe(200);
    expect((await get(small, second)).status).toBe(429);
    const other = await buildOrg();
    expect((await get(small, other.serviceToken)).headers['x-ratelimit-remaining']).toBe('4');
  });

  it('errors after authentication carry the headers too (403 here); 401 and public routes are not counted', async () => {
    const org = await buildOrg();
    const noScope = await buildServiceToken(org, ['jobs:read']);
    const forbidden = await get(small, noScope);
    expect(forbidden.status).toBe(403);
    expect(forbidden.headers['ratelimit-policy']).toBe('5;w=3600');
    const anonymous = await small.request.get('/api/agents');
    expect(anonymous.status).toBe(401);
    expect(anonymous.headers['x-ratelimit-limit']).toBeUndefined();
    expect((await small.request.get('/api/version')).headers['x-ratelimit-limit']).toBeUndefined();
  });

  it('api instances share one budget (it is counted in the database)', async () => {
    await awayFromWindowEnd(3600, 30_000);
    const other = createTestApp({ RATE_LIMIT_REQUESTS: '5', RATE_LIMIT_WINDOW_SECONDS: '3600' });
    try {
      const org = await buildOrg();
      for (let i = 0; i < 3; i++) expect((await get(small, org.serviceToken)).status).toBe(200);
      for (let i = 0; i < 2; i++) expect((await get(other, org.serviceToken)).status).toBe(200);
      expect((await get(other, org.serviceToken)).status).toBe(429);
      expect((await get(small, org.serviceToken)).status).toBe(429);
    } finally {
      await other.close();
    }
  });

  it('concurrent requests are each counted once', async () => {
    await awayFromWindowEnd(3600, 30_000);
    const org = await buildOrg();
    const all = await Promise.all(Array.from({ length: 10 }, () => get(small, org.serviceToken)));
    expect(all.filter((r) => r.status === 200)).toHaveLength(5);
    expect(all.filter((r) => r.status === 429)).toHaveLength(5);
    expect(all.map((r) => r.headers['x-ratelimit-remaining']).sort()).toEqual(
      ['0', '0', '0', '0', '0', '0', '1', '2', '3', '4'].sort()
    );
  });

  it('the v1 surface is not limited and carries no rate-limit headers', async () => {
    const org = await buildOrg();
    for (let i = 0; i < 7; i++) {
      const res = await small.request.get('/api/v1/agents').set('Authorization', bearer(org.apiToken));
      expect(res.status).toBe(200);
      expect(res.headers['x-ratelimit-limit']).toBeUndefined();
    }
  });

  it('at the default, the 901st request of a minute is 429 with the headers (900;w=60)', async () => {
    await awayFromWindowEnd(60, 12_000);
    const org = await buildOrg();
    const token = await buildServiceToken(org, ['jobs:read']); // 403 after counting: the cheapest counted request
    const statuses: number[] = [];
    for (let sent = 0; sent < 900; sent += 25) {
      const batch = await Promise.all(Array.from({ length: 25 }, () => get(standard, token)));
      statuses.push(...batch.map((r) => r.status));
    }
    expect(statuses.filter((s) => s === 403)).toHaveLength(900);
    const last = await get(standard, org.serviceToken);
    expect(last.status).toBe(429);
    expect(last.body).toEqual(currentError('rate_limited', 'Too many requests'));
    expect(last.headers).toMatchObject({
      'x-ratelimit-limit': '900',
      'x-ratelimit-remaining': '0',
      'ratelimit-limit': '900',
      'ratelimit-remaining': '0',
      'ratelimit-policy': '900;w=60',
    });
    expect(Number(last.headers['retry-after'])).toBeGreaterThan(0);
    expect(Number(last.headers['retry-after'])).toBeLessThanOrEqual(60);
    expect(Number(last.headers['x-ratelimit-reset'])).toBe(Math.ceil(Date.now() / 60_000) * 60);
    expect(await RateWindow.countDocuments({})).toBeGreaterThan(0);
  }, 60_000);
});
