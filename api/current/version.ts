/** GET /api/version: metadata of the deployed version (public). */
import { buildInfo } from '../../lib/version';
import type { RouteSpec } from '../route';
import { record } from '../schemas';

/** @returns the route declarations. */
export function versionRoutes(): RouteSpec[] {
  return [
    {
      method: 'get',
      path: '/version',
      summary: 'Deployed version metadata',
      tags: ['Meta'],
      auth: 'public',
      responses: {
        200: record({
          name: { type: 'string' },
          version: { type: 'string' },
          apiVersions: { type: 'string' },
          node: { type: 'string' },
          startedAt: { type: 'string', format: 'date-time' },
        }),
      },
      handler: (ctx) => {
        ctx.body = buildInfo();
      },
    },
  ];
}
