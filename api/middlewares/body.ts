/**
 * JSON body parsing with a size limit. Only `application/json` (and `+json`) bodies are parsed; a non-empty body
 * of another media type on a mutating request is refused with 415. Parser failures are translated by the error
 * middleware (400 `Invalid JSON in request body`, 413).
 */
import { bodyParser } from '@koa/bodyparser';
import type { Next } from 'koa';
import { UnsupportedMediaTypeError } from '../../lib/errors';
import type { AppContext } from '../context';

const MUTATING = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/**
 * @param options.limitBytes largest accepted body.
 * @returns the middleware.
 */
export function jsonBody(options: { limitBytes: number }) {
  const parse = bodyParser({
    enableTypes: ['json'],
    jsonLimit: options.limitBytes,
    jsonStrict: true,
    extendTypes: { json: ['application/json', 'application/*+json'] },
  });
  return async function jsonBodyMiddleware(ctx: AppContext, next: Next): Promise<void> {
    if (MUTATING.has(ctx.method) && hasBody(ctx) && !ctx.is('application/json', 'application/*+json')) {
      throw new UnsupportedMediaTypeError();
    }
    await parse(ctx as never, next);
  };
}

function hasBody(ctx: AppContext): boolean {
  const length = ctx.get('content-length');
  if (length !== '') return Number(length) > 0;
  return ctx.get('transfer-encoding') !== '';
}
