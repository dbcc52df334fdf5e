/**
 * Routes are declared as data (STYLE "schemas beside the route"): method, path, authentication, scope, request
 * schemas (body, query, params), response schemas and the handler. mountRoutes() turns them into a router, and
 * the same declarations feed the OpenAPI document. When `validateResponses` is on (tests), every response body is
 * checked against its declared schema and a mismatch fails the request with a 500.
 */
import Router from '@koa/router';
import type { Next } from 'koa';
import { check, checkResponse, type Schema } from '../lib/ajv';
import { InternalError, ValidationError } from '../lib/errors';
import type { Scope } from '../models';
import type { AppContext, AppState } from './context';
import { authenticate, requireScope } from './middlewares/auth';
import { idempotency } from './middlewares/idempotency';
import { rateLimit } from './middlewares/rateLimit';
import type { IdentityProviders } from '../lib/oidc';
import type { CookieSessions } from './sessionCookie';
import type { Validated } from './schemas';

/**
 * Who may call a route: v1 `td_` tokens, service tokens, client-library calls (either kind), the MCP endpoint's
 * bearer (an OAuth access token or a service token: {@link MountOptions.mcpAuth}), or anyone.
 */
export type RouteAuth = 'v1' | 'service' | 'client' | 'mcp' | 'public';

export interface RouteSpec {
  method: 'get' | 'post' | 'put' | 'patch' | 'delete';
  /** Koa-router path relative to the surface prefix, e.g. `/agents/:id`. */
  path: string;
  summary: string;
  tags: string[];
  auth: RouteAuth;
  /**
   * The scope a service token needs (required on every `service` and `client` route; reads take the resource's
   * `:read` scope, writes its `:write` scope). The route → scope table of docs/current-surface.md is generated from it.
   */
  scope?: Scope;
  body?: Schema;
  /** The body may be left out (a bodyless request reads as `{}`): the document says it is not required. */
  bodyOptional?: boolean;
  /**
   * The route reads its request body itself, as bytes (uploads): `{ contentType, description }` for the document,
   * and `schema` when the body is a form (multipart/form-data: its parts).
   * The JSON body parser leaves such requests alone, and they do not honour Idempotency-Key (the body is streamed,
   * never fingerprinted) [docs/decisions.md "Workspace files"].
   */
  rawBody?: Schema;
  query?: Schema;
  params?: Schema;
  /**
   * Success responses by status; routes answering only `text/event-stream` declare `{ sse: true }`, other non-JSON
   * answers `{ contentType: 'text/html' }` (not validated as JSON), answers without a body (204) `{ noContent: true }`.
   */
  responses: Record<number, Schema>;
  /** The route may also answer 200 as `text/event-stream` (clients choose). */
  streams?: boolean;
  /** Event name → data schema of the route's text/event-stream answer (documented in OpenAPI). */
  events?: Record<string, Schema>;
  /** Error statuses the route answers besides the ones implied by its auth, input and params (e.g. 409). */
  errors?: number[];
  /** Answers the request; `input` is the body, query and params as validated (typed by {@link route}). */
  handler: (ctx: AppContext, input: RouteInput) => Promise<void> | void;
}

/** The validated input of a route: body, query and path parameters. */
export interface RouteInput<B = unknown, Q = unknown, P = Record<string, string>> {
  body: B;
  query: Q;
  params: P;
}

/** A route whose handler's input is typed from the route's own request schemas. */
export type TypedRouteSpec<B, Q, P> = Omit<RouteSpec, 'body' | 'query' | 'params' | 'handler'> & {
  body?: B;
  query?: Q;
  params?: P;
  handler: (
    ctx: AppContext,
    input: RouteInput<Validated<B>, Validated<Q>, Validated<P, Record<string, string>>>
  ) => Promise<void> | void;
};

/**
 * Declares a route whose handler reads its input as the types its schemas define: one definition of each request
 * shape, the schema, and no type written by hand beside it (docs/decisions.md "Request types and the dispatcher").
 * Request schemas keep their literal types for this (api/schemas.ts helpers, `as const`).
 * @param spec the declaration; `handler` gets `{ body, query, params }` typed from `body`, `query` and `params`.
 * @returns the declaration as mountRoutes takes it.
 */
export function route<
  const B extends Schema | undefined = undefined,
  const Q extends Schema | undefined = undefined,
  const P extends Schema | undefined = undefined,
>(spec: TypedRouteSpec<B, Q, P>): RouteSpec {
  // validateInput checked the input against these very schemas before the handler runs.
  return spec as RouteSpec;
}

/**
 * The validated input of a route, untyped: path parameters as strings (routes that read a body or a query declare
 * themselves with {@link route} and get them typed).
 * @param ctx the context.
 * @returns body, query and params as validated.
 */
export function input(ctx: AppContext): RouteInput {
  return ctx.state.input as RouteInput;
}

function validateInput(route: RouteSpec) {
  return async function validateMiddleware(ctx: AppContext, next: Next): Promise<void> {
    const params = { ...ctx.params };
    const query = { ...(ctx.query as Record<string, unknown>) };
    let body: unknown = (ctx.request as { body?: unknown }).body;
    if (route.params) {
      const msg = check(route.params, params, 'query');
      if (msg) throw new ValidationError(msg);
    }
    if (route.query) {
      const msg = check(route.query, query, 'query');
      if (msg) throw new ValidationError(msg);
    }
    if (route.body) {
      if (body === undefined) body = {};
      const msg = check(route.body, body, 'body');
      if (msg) throw new ValidationError(msg);
    }
    ctx.state.input = { body, query, params };
    await next();
  };
}

function checkOutput(route: RouteSpec) {
  return async function responseSchemaMiddleware(ctx: AppContext, next: Next): Promise<void> {
    await next();
    if (ctx.respond === false) return; // written by the handler itself (the MCP transport)
    const schema = route.responses[ctx.status];
    if (!schema || schema.sse || schema.contentType || schema.noContent || ctx.response.type === 'text/event-stream')
      return;
    const problem = checkResponse(schema, ctx.body);
    if (problem) {
      ctx.state.log.error(
        { route: `${route.method.toUpperCase()} ${route.path}`, problem },
        'response does not match its schema'
      );
      throw new InternalError(`Response does not match its schema: ${problem}`);
    }
  };
}

type Middleware = (ctx: AppContext, next: Next) => Promise<void>;

/** What a surface applies to its authenticated routes besides authentication and scopes. */
export interface MountOptions {
  /** Check every response body against its schema. */
  validateResponses: boolean;
  /** Count authenticated requests against this budget (the current surface; v1 is not limited). */
  rateLimit?: { limit: number; windowSeconds: number };
  /** Honour `Idempotency-Key` on authenticated mutating requests (the current surface). */
  idempotency?: boolean;
  /** Authenticates the group's `mcp` routes (api/mcp/auth.ts). */
  mcpAuth?: Middleware;
  /** Seals the answers idempotency records keep (ENCRYPTION_KEY; commands/idempotency.ts). */
  sealKey?: Buffer;
  /**
   * The console's session cookie, accepted by the group's `v1`, `service` and `client` routes when a request has no
   * `Authorization` header (api/sessionCookie.ts).
   */
  session?: CookieSessions;
  /** The identity providers whose ID tokens the group's `client` routes accept (lib/oidc.ts). */
  identity?: IdentityProviders;
}

/** Surface options besides response validation (per route group). */
export type SurfaceOptions = Omit<MountOptions, 'validateResponses' | 'sealKey'>;

/** The route counts against the caller's budget and answers the rate-limit headers (also read by the OpenAPI document). */
export function isRateLimited(route: RouteSpec, options: SurfaceOptions): boolean {
  return route.auth !== 'public' && options.rateLimit !== undefined;
}

/** The route honours `Idempotency-Key` (also read by the OpenAPI document). */
export function isIdempotent(route: RouteSpec, options: SurfaceOptions): boolean {
  return options.idempotency === true && route.method !== 'get' && route.auth !== 'public' && !route.rawBody;
}

function authFor(route: RouteSpec, options: MountOptions): Middleware[] {
  const chain: Middleware[] = [];
  if (route.auth === 'v1') chain.push(authenticate('v1', options.session));
  if (route.auth === 'service') chain.push(authenticate('service', options.session));
  if (route.auth === 'client') chain.push(authenticate('any', options.session, options.identity));
  if (route.auth === 'mcp') {
    if (!options.mcpAuth) throw new Error(`${route.method.toUpperCase()} ${route.path}: no mcpAuth for its group`);
    chain.push(options.mcpAuth);
  }
  if (isRateLimited(route, options)) chain.push(rateLimit(options.rateLimit!));
  if (route.scope) chain.push(requireScope(route.scope));
  return chain;
}

/**
 * @param prefix the surface prefix (`/api/v1`, `/api`, or '').
 * @param routes the declarations.
 * @param options response validation, rate limit and idempotency of the surface.
 * @returns a router.
 */
export function mountRoutes(prefix: string, routes: RouteSpec[], options: MountOptions): Router<AppState> {
  const router = new Router<AppState>({ prefix });
  for (const route of routes) {
    if (route.auth !== 'public' && route.auth !== 'v1' && !route.scope)
      throw new Error(`${route.method.toUpperCase()} ${prefix}${route.path} declares no scope`);
    const chain = [
      ...authFor(route, options),
      ...(options.validateResponses ? [checkOutput(route)] : []),
      validateInput(route),
      ...(isIdempotent(route, options) ? [idempotency(options.sealKey)] : []),
      async (ctx: AppContext) => route.handler(ctx, input(ctx)),
    ];
    router[route.method](route.path, ...(chain as never[]));
  }
  return router;
}
