/**
 * The one error renderer (STYLE "one error vocabulary"). Translates infrastructure errors (body parser, mongoose,
 * MongoDB driver, Temporal) into lib/errors types, then renders
 *   v1 (`/api/v1/...`):  {error:true, statusCode, statusMessage, message}
 *   current (others):    {error:{code, message}}
 *   oauth (/oauth/*, /mcp): {error, error_description} (RFC 6749 §5.2; our code where OAuth names none)
 * with `x-request-id` always set. Unknown errors are logged with their stack and answered 500
 * `An unexpected error occurred`.
 */
import { STATUS_CODES } from 'node:http';
import type { Next } from 'koa';
import mongoose from 'mongoose';
import { isGrpcServiceError, WorkflowExecutionAlreadyStartedError, WorkflowNotFoundError } from '@temporalio/client';
import { OAUTH_PATHS } from '../../commands/oauth';
import { DeadlineExceededError } from '../../lib/deadline';
import { isDuplicateKey } from '../../lib/mongo';
import {
  AppError,
  ConflictError,
  InternalError,
  InvalidJsonError,
  NotFoundError,
  OAuthError,
  OverloadedError,
  PayloadTooLargeError,
  RequestAbortedError,
  ServiceUnavailableError,
  StateConflictError,
  UnsupportedMediaTypeError,
  ValidationError,
} from '../../lib/errors';
import { surfaceOf, type AppContext } from '../context';

interface ErrorLike {
  name?: string;
  code?: unknown;
  status?: unknown;
  type?: unknown;
  message?: string;
  cause?: unknown;
}

/** Errors of the MongoDB driver that mean the server cannot be reached (or was lost mid-operation). */
const MONGO_OUTAGE_ERRORS = new Set([
  'MongoServerSelectionError',
  'MongoNetworkError',
  'MongoNetworkTimeoutError',
  'MongoNotConnectedError',
  'MongoTopologyClosedError',
  'MongoPoolClearedError',
  'MongoServerClosedError',
]);
/** gRPC statuses of a Temporal server that cannot be reached in time: UNAVAILABLE, DEADLINE_EXCEEDED. */
const GRPC_OUTAGE_CODES = new Set([14, 4]);
/**
 * FerretDB answers InternalError (code 1) with its PostgreSQL driver's words when PostgreSQL is away (`failed to
 * connect`, `terminating connection`, `connection refused`, `conn closed`).
 */
const FERRETDB_BACKEND_DOWN = /failed to connect|terminating connection|connection refused|conn closed|unexpected EOF/i;
/**
 * Socket errors that the MongoDB driver sometimes passes on unwrapped: a command written to a connection whose server
 * just went away fails with node's own `This socket has been ended by the other party` (EPIPE) or a reset.
 */
const SOCKET_LOST_CODES = new Set(['EPIPE', 'ECONNRESET']);

/**
 * Whether an error means that MongoDB or Temporal is unreachable, looking through `cause` chains (the Temporal
 * client wraps gRPC errors in a ServiceError whose own message names the operation only).
 * @param err the thrown value.
 * @returns true for an outage of a dependency.
 */
export function isDependencyOutage(err: unknown): boolean {
  for (let e = err as ErrorLike | undefined, depth = 0; e && depth < 10; e = e.cause as ErrorLike, depth++) {
    if (e instanceof DeadlineExceededError) return true;
    if (typeof e.name === 'string' && MONGO_OUTAGE_ERRORS.has(e.name)) return true;
    if (e.name === 'MongoServerError' && e.code === 1 && FERRETDB_BACKEND_DOWN.test(String(e.message))) return true;
    if (isGrpcServiceError(e) && GRPC_OUTAGE_CODES.has(e.code)) return true;
    if (e.name === 'TransportError') return true;
    if (e.name === 'Error' && typeof e.code === 'string' && SOCKET_LOST_CODES.has(e.code)) return true;
  }
  return false;
}

/**
 * Maps any thrown value to an AppError (or undefined for unexpected errors).
 * @param err the thrown value.
 * @param bodyLimitBytes configured JSON limit (for the 413 message).
 * @returns the typed error, or undefined.
 */
export function translateError(err: unknown, bodyLimitBytes: number): AppError | undefined {
  if (err instanceof AppError) return err;
  if (err instanceof WorkflowNotFoundError) return new NotFoundError('Not found');
  if (err instanceof WorkflowExecutionAlreadyStartedError) return new ConflictError('Already started');
  if (err instanceof mongoose.Error.CastError) return new ValidationError(`Invalid value for ${err.path}`);
  if (err instanceof mongoose.Error.ValidationError) {
    const first = Object.values(err.errors)[0];
    return new ValidationError(first ? `Invalid value for ${first.path}` : 'Invalid value');
  }
  const e = (err ?? {}) as ErrorLike;
  if (isDuplicateKey(err)) return new ConflictError('A resource with the same unique value already exists');
  // raw-body / co-body (via @koa/bodyparser)
  if (e.type === 'entity.too.large' || e.status === 413) return new PayloadTooLargeError(bodyLimitBytes);
  if (e.name === 'UnsupportedBodyTypeError' || e.status === 415) return new UnsupportedMediaTypeError();
  if (e.type === 'entity.parse.failed' || e.name === 'SyntaxError' || e.type === 'encoding.unsupported')
    return new InvalidJsonError();
  if (e.type === 'request.aborted') return new RequestAbortedError();
  if (isDependencyOutage(err)) return new ServiceUnavailableError();
  return undefined;
}

/** Our codes that OAuth has its own word for (RFC 6749 §5.2, RFC 6750 §3.1) on the `oauth` surface. */
const OAUTH_CODES: Record<string, string> = {
  validation_failed: 'invalid_request',
  invalid_json: 'invalid_request',
  invalid_content_encoding: 'invalid_request',
  request_aborted: 'invalid_request',
  unsupported_media_type: 'invalid_request',
  payload_too_large: 'invalid_request',
  unauthorized: 'invalid_token',
  forbidden: 'insufficient_scope',
  service_unavailable: 'temporarily_unavailable',
};

/**
 * @param error the error.
 * @param path the request path.
 * @returns the OAuth error body.
 */
function oauthBody(error: AppError, path: string): Record<string, string> {
  if (error instanceof OAuthError) return { error: error.oauthCode, error_description: error.message };
  // RFC 7591 §3.2.2 names the registration's own word for bad metadata.
  const mapped =
    path === OAUTH_PATHS.register && error.code === 'validation_failed' ? 'invalid_client_metadata' : undefined;
  const code = mapped ?? OAUTH_CODES[error.code] ?? (error.status >= 500 ? 'server_error' : error.code);
  return { error: code, error_description: error.message };
}

/**
 * Renders an AppError on the context in the envelope of the request's surface.
 * @param ctx the context.
 * @param error the error to render.
 */
export function renderError(ctx: AppContext, error: AppError): void {
  ctx.status = error.status;
  for (const [k, v] of Object.entries(error.headers)) ctx.set(k, v);
  if (ctx.state.requestId) ctx.set('x-request-id', ctx.state.requestId);
  const surface = surfaceOf(ctx.path);
  if (surface === 'oauth' || error instanceof OAuthError) {
    ctx.set('Cache-Control', 'no-store');
    ctx.body = oauthBody(error, ctx.path);
  } else if (surface === 'v1') {
    ctx.body = {
      error: true,
      statusCode: error.status,
      statusMessage: STATUS_CODES[error.status] ?? 'Error',
      message: error.message,
    };
  } else
    ctx.body = {
      error: {
        code: error.code,
        message: error.message,
        ...(error instanceof StateConflictError ? { current_state: error.currentState } : {}),
      },
    };
}

/**
 * @param options.bodyLimitBytes configured JSON limit, named in 413 messages.
 * @returns the middleware; mount it right after requestId.
 */
export function errorHandler(options: { bodyLimitBytes: number }) {
  return async function errorHandlerMiddleware(ctx: AppContext, next: Next): Promise<void> {
    try {
      await next();
      if (ctx.status === 404 && ctx.body === undefined && ctx.respond !== false)
        throw new NotFoundError('Route not found');
    } catch (err) {
      if (ctx.headerSent) {
        // The handler was writing the response itself (the MCP transport): nothing can be answered any more.
        ctx.state.log?.error({ err }, 'error after the response started');
        return;
      }
      const known = translateError(err, options.bodyLimitBytes);
      // A refusal by the admission of executions is counted (aas_executions_refused_total), not logged: under
      // overload a line each would cost most when there is least to spare.
      if (known && (known.status < 500 || known instanceof OverloadedError)) {
        renderError(ctx, known);
        return;
      }
      if (known) ctx.state.log?.warn({ err }, known.message);
      else ctx.state.log?.error({ err }, 'unexpected error');
      renderError(ctx, known ?? new InternalError());
    }
  };
}
