/**
 * createApp(deps): the Koa application without listen() (tests drive it over real HTTP with supertest).
 * Middleware order: requestId → errorHandler → JSON body → request deadline → the route groups' routers.
 * The route groups are declared once ({@link routeGroups}): the same list is mounted and documented
 * (api/openapi.ts), so the contract covers exactly the routes that answer.
 */
import { createExecutionAdmission } from '../commands/executionStart';
import { webhookDispatcher } from '../commands/webhooks';
import Router from '@koa/router';
import Koa from 'koa';
import { configureCaches } from '../lib/sharedCache';
import { configureRetention } from '../lib/expiry';
import { MethodNotAllowedError } from '../lib/errors';
import { buildInfo } from '../lib/version';
import { codecCors, codecRoutes } from './codec';
import { reservedSegments, serveConsole } from './console';
import { metricsRoutes } from './metrics';
import type { AppContext, AppState } from './context';
import type { AppDeps } from './deps';
import { CURRENT_PREFIX, currentRoutes } from './current';
import { wellKnownRoutes, type Contract } from './current/contract';
import { healthRoutes } from './health';
import { mcpSurfaceRoutes } from './mcp';
import { mcpAuthenticate } from './mcp/auth';
import { jsonBody } from './middlewares/body';
import { errorHandler } from './middlewares/errors';
import { requestDeadline } from './middlewares/requestDeadline';
import { requestId } from './middlewares/requestId';
import { buildOpenApi, contractHash, type RouteGroup } from './openapi';
import { mountRoutes } from './route';
import { cookieSessions } from './sessionCookie';
import { identityProviders } from '../lib/oidc';
import { V1_PREFIX, v1Routes } from './v1';

/**
 * Every documented route, by mount prefix.
 * @param deps app dependencies.
 * @param contract the document, for the routes that serve it.
 * @returns the groups.
 */
export function routeGroups(deps: AppDeps, contract: () => Contract): RouteGroup[] {
  // Both surfaces take the console's session cookie; the MCP endpoint does not [docs/decisions.md "Console sessions"].
  const session = cookieSessions(deps.config);
  return [
    { prefix: V1_PREFIX, routes: v1Routes(deps), options: { session } },
    {
      prefix: CURRENT_PREFIX,
      routes: currentRoutes(deps, contract),
      options: {
        rateLimit: { limit: deps.config.rateLimitRequests, windowSeconds: deps.config.rateLimitWindowSeconds },
        idempotency: true,
        session,
        identity: identityProviders(deps.config.oidc),
      },
    },
    {
      prefix: '',
      routes: [
        ...healthRoutes(deps),
        ...wellKnownRoutes(deps.config, contract),
        ...codecRoutes(deps.config),
        ...metricsRoutes(deps.config),
      ],
    },
    {
      prefix: '',
      routes: mcpSurfaceRoutes(deps),
      options: {
        rateLimit: { limit: deps.config.rateLimitRequests, windowSeconds: deps.config.rateLimitWindowSeconds },
        mcpAuth: mcpAuthenticate(deps.config),
      },
    },
  ];
}

/**
 * @param groups every mounted route group.
 * @returns whether a request goes to a route that reads its own body (`rawBody`: uploads).
 */
function rawBodyMatcher(groups: RouteGroup[]): (ctx: AppContext) => boolean {
  const router = new Router();
  for (const group of groups) {
    for (const route of group.routes) {
      if (route.rawBody) router[route.method](`${group.prefix}${route.path}`, ...([() => undefined] as never[]));
    }
  }
  return (ctx) => router.match(ctx.path, ctx.method).route;
}

/**
 * 405 for a path that exists with other methods (issue 38; the answer in the surface's error shape, with `Allow`):
 * after the routers, a request nothing answered whose path a route has is refused naming that path's methods.
 * @param groups every mounted route group.
 * @returns the middleware.
 */
function methodNotAllowed(groups: RouteGroup[]) {
  const router = new Router();
  for (const group of groups) {
    for (const route of group.routes) router[route.method](`${group.prefix}${route.path}`, () => undefined);
  }
  return async function methodNotAllowedMiddleware(ctx: AppContext, next: () => Promise<void>): Promise<void> {
    await next();
    if (ctx.status !== 404 || ctx.body !== undefined || ctx.respond === false || ctx.method === 'OPTIONS') return;
    const methods = new Set(router.match(ctx.path, ctx.method).path.flatMap((layer) => layer.methods));
    if (methods.size > 0) throw new MethodNotAllowedError([...methods]);
  };
}

/** Error codes of a response whose client disconnected before it ended. */
const CLIENT_GONE = new Set(['ERR_STREAM_PREMATURE_CLOSE', 'ECONNRESET', 'EPIPE']);

/**
 * @param given configuration, logger, Temporal client, event tailer and the shutdown signal (and the admission of
 *   executions; made from the configuration when absent, closed on the shutdown signal).
 * @returns the Koa app.
 */
export function createApp(given: AppDeps): Koa<AppState> {
  const deps: AppDeps = {
    ...given,
    admission:
      given.admission ??
      createExecutionAdmission(given.config, (err) => given.logger.warn({ err }, 'admission sweep failed')),
    dispatchEvent: given.dispatchEvent ?? webhookDispatcher(given.temporal, given.logger),
  };
  const admission = deps.admission!;
  if (given.shutdown.aborted) admission.close();
  else given.shutdown.addEventListener('abort', () => admission.close(), { once: true });
  configureCaches(deps.config.cacheTtlMs);
  configureRetention(deps.config.retention);
  // The contract routes serve the document that describes them too: it is read at request time.
  const holder: { contract?: Contract } = {};
  const groups = routeGroups(deps, () => holder.contract!);
  const document = buildOpenApi(groups, {
    version: buildInfo(deps.config.gitCommit).version,
    appUrl: deps.config.appUrl,
  });
  holder.contract = { document, hash: contractHash(document) };

  const app = new Koa<AppState>();
  app.use(requestId(deps.logger));
  app.use(errorHandler({ bodyLimitBytes: deps.config.bodyLimitBytes }));
  app.use(codecCors(deps.config));
  app.use(jsonBody({ limitBytes: deps.config.bodyLimitBytes, rawBody: rawBodyMatcher(groups) }));
  app.use(requestDeadline(deps.config.requestDeadlineMs));
  app.use(methodNotAllowed(groups));
  // The console answers the GET/HEAD requests no route answers (api/console.ts), outside every route's own path.
  app.use(serveConsole({ dir: deps.config.consoleDir, reserved: reservedSegments(groups) }));
  for (const group of groups) {
    const options = {
      validateResponses: deps.config.validateResponses,
      sealKey: deps.config.encryptionKey,
      ...group.options,
    };
    app.use(mountRoutes(group.prefix, group.routes, options).routes());
  }
  app.on('error', (err: unknown) => {
    // A client that goes away mid-response (an event stream it closes, a download it stops) ends that response;
    // it is not a problem of the service.
    const code = (err as { code?: unknown } | null)?.code;
    if (typeof code === 'string' && CLIENT_GONE.has(code))
      deps.logger.debug({ code }, 'client closed the response early');
    else deps.logger.warn({ err }, 'response error');
  });
  return app;
}
