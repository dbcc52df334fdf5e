/**
 * Scopes on every current-surface route, table-driven from the route declarations (api/current/index.ts): no
 * token → 401; a token without the route's scope → 403; the scope itself, its write scope (for reads) and `*`
 * pass the scope check.
 */
import type { AppDeps } from '../../../api/deps';
import { currentRoutes } from '../../../api/current';
import type { RouteSpec } from '../../../api/route';
import { SCOPES, type Scope } from '../../../models';
import { useTestApp } from '../../helpers/app';
import { currentError, noContract } from '../../helpers/current';
import { testConfig } from '../../helpers/env';
import { bearer, buildOrg, buildServiceToken } from '../../helpers/factories';
import { useTestDatabase } from '../../helpers/mongo';

useTestDatabase();
const t = useTestApp();

const routes = currentRoutes({ config: testConfig() } as unknown as AppDeps, noContract).filter(
  (r) => r.auth !== 'public'
);
const name = (r: RouteSpec): string => `${r.method.toUpperCase()} /api${r.path}`;

/** A scope that does not grant `needed` (neither it, nor its write scope, nor `*`). */
function unrelatedScope(needed: Scope): Scope {
  const writeOf = needed.replace(/:read$/, ':write');
  return SCOPES.find((s) => s !== needed && s !== writeOf && s !== '*')!;
}

function call(r: RouteSpec, organizationId: string, token?: string) {
  const path = `/api${r.path}`.replace(':orgId', organizationId).replace(/:[A-Za-z]+/g, 'x_unknown');
  const req = t.request[r.method](path);
  if (token) req.set('Authorization', bearer(token));
  // A stream with no id in its path (GET /api/events) would stay open: a position it cannot parse makes it answer
  // 400 at once, after the scope check.
  if (r.responses[200]?.sse && !r.path.includes(':')) req.set('Last-Event-ID', 'not-a-position');
  return r.method === 'get' || r.method === 'delete' ? req : req.send({});
}

it('every authenticated current-surface route declares a scope', () => {
  expect(routes.length).toBeGreaterThan(5);
  expect(routes.filter((r) => !r.scope).map(name)).toEqual([]);
});

describe.each(routes.map((r) => [name(r), r] as const))('%s', (_name, route) => {
  const scope = route.scope!;

  it('401 without a token or with an unknown one', async () => {
    const org = await buildOrg();
    const none = await call(route, org.organizationId);
    expect(none.status).toBe(401);
    expect(none.body).toEqual(currentError('unauthorized', 'Authorization header required'));
    const unknown = await call(route, org.organizationId, 'svc_unknown');
    expect(unknown.status).toBe(401);
    expect(unknown.body).toEqual(currentError('unauthorized', 'Invalid or expired token'));
  });

  it(`403 forbidden without ${scope}`, async () => {
    const org = await buildOrg();
    const res = await call(route, org.organizationId, await buildServiceToken(org, [unrelatedScope(scope)]));
    expect(res.status).toBe(403);
    expect(res.body).toEqual(currentError('forbidden', "You don't have permission to access this resource"));
  });

  it(`passes the scope check with ${scope}, with its write scope, and with *`, async () => {
    const org = await buildOrg();
    const writeOf = scope.replace(/:read$/, ':write');
    const granting = [[scope], ['*'], ...(writeOf !== scope && SCOPES.includes(writeOf as Scope) ? [[writeOf]] : [])];
    for (const scopes of granting) {
      const res = await call(route, org.organizationId, await buildServiceToken(org, scopes));
      expect([res.status, scopes]).not.toEqual([403, scopes]);
      expect(res.status).not.toBe(401);
    }
  });
});
