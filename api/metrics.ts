/**
 * `GET /metrics` on the api's port [docs/decisions.md "Observability: metrics"]: this process's metrics in Prometheus
 * text format (lib/metrics.ts), for the scraper that holds METRICS_TOKEN (`Authorization: Bearer …`). The api's
 * port is public, so the endpoint answers 404 while METRICS_TOKEN is unset and 401 to anyone else.
 */
import type { Config } from '../lib/config';
import { safeEqual } from '../lib/crypto';
import { NotFoundError, UnauthorizedError } from '../lib/errors';
import { METRICS_CONTENT_TYPE, renderMetrics } from '../lib/metrics';
import { route, type RouteSpec } from './route';

/**
 * @param config METRICS_TOKEN and TEMPORAL_METRICS_PORT.
 * @returns the route (mounted at the root).
 */
export function metricsRoutes(config: Pick<Config, 'observability'>): RouteSpec[] {
  return [
    route({
      method: 'get',
      path: '/metrics',
      summary: 'Prometheus metrics of this process (operators; METRICS_TOKEN)',
      tags: ['Operations'],
      auth: 'public',
      responses: { 200: { contentType: 'text/plain', description: 'Prometheus text exposition format' } },
      errors: [401, 404],
      handler: async (ctx) => {
        const token = config.observability.metricsToken;
        if (!token) throw new NotFoundError('Route not found');
        const given = /^Bearer\s+(\S+)$/i.exec(ctx.get('authorization'))?.[1];
        if (!given || !safeEqual(given, token)) throw new UnauthorizedError('Invalid or missing metrics token');
        ctx.type = METRICS_CONTENT_TYPE;
        ctx.body = await renderMetrics(config.observability.temporalMetricsPort);
      },
    }),
  ];
}
