/**
 * The one error renderer (STYLE "one error vocabulary"). Translates infrastructure errors (body parser, mongoose,
 * MongoDB driver, Temporal) into lib/errors types, then renders
 *   v1 (`/api/v1/...`):  {error:true, statusCode, statusMessage, message}
 *   current (others):    {error:{code, message}}
 * with `x-request-id` always set. Unknown errors are logged with their stack and answered 500
 * `An unexpected error occurred`.
 */
import { STATUS_CODES } from 'node:http';
import type { Next } from 'koa';
import mongoose from 'mongoose';
import { WorkflowExecutionAlreadyStartedError, WorkflowNotFoundError } from '@temporalio/client';
import {
  AppError,
  ConflictError,
  InternalError,
  InvalidJsonError,
  NotFoundError,
  PayloadTooLargeError,
  ServiceUnavailableError,
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
  if (e.code === 11000) return new ConflictError('A resource with the same unique value already exists');
  // raw-body / co-body (via @koa/bodyparser)
  if (e.type === 'entity.too.large' || e.status === 413) return new PayloadTooLargeError(bodyLimitBytes);
  if (e.name === 'UnsupportedBodyTypeError' || e.status === 415) return new UnsupportedMediaTypeError();
  if (e.type === 'entity.parse.failed' || e.name === 'SyntaxError' || e.type === 'encoding.unsupported')
    return new InvalidJsonError();
  if (e.type === 'request.aborted') return new AppError(400, 'request_aborted', 'Request aborted');
  if (
    e.name === 'MongoServerSelectionError' ||
    e.name === 'MongoNetworkError' ||
    e.name === 'MongoNotConnectedError' ||
    e.name === 'MongoNetworkTimeoutError' ||
    e.name === 'MongoTopologyClosedError' ||
    (e.name === 'ServiceError' && /UNAVAILABLE|DEADLINE_EXCEEDED|connect/i.test(String(e.message))) ||
    e.name === 'TransportError'
  )
    return new ServiceUnavailableError();
  return undefined;
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
  ctx.body =
    surfaceOf(ctx.path) === 'v1'
      ? {
          error: true,
          statusCode: error.status,
          statusMessage: STATUS_CODES[error.status] ?? 'Error',
          message: error.message,
        }
      : { error: { code: error.code, message: error.message } };
}

/**
 * @param options.bodyLimitBytes configured JSON limit, named in 413 messages.
 * @returns the middleware; mount it right after requestId.
 */
export function errorHandler(options: { bodyLimitBytes: number }) {
  return async function errorHandlerMiddleware(ctx: AppContext, next: Next): Promise<void> {
    try {
      await next();
      if (ctx.status === 404 && ctx.body === undefined) throw new NotFoundError('Route not found');
    } catch (err) {
      const known = translateError(err, options.bodyLimitBytes);
      if (known && known.status < 500) {
        renderError(ctx, known);
        return;
      }
      if (known) ctx.state.log?.warn({ err }, known.message);
      else ctx.state.log?.error({ err }, 'unexpected error');
      renderError(ctx, known ?? new InternalError());
    }
  };
}
