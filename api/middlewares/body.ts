/**
 * JSON body parsing with a size limit. Only `application/json` (and `+json`) bodies are parsed; a non-empty body
 * of another media type on a mutating request is refused with 415. `Content-Encoding` gzip, deflate and br are
 * decoded (the limit applies to the decoded size: 413 above); any other coding is 415 naming Content-Encoding, and
 * bytes that do not decode as their declared coding are 400 [docs/decisions.md "Bodies"]. Other parser failures are
 * translated by the error middleware (400 `Invalid JSON in request body`, 413).
 */
import { bodyParser } from '@koa/bodyparser';
import type { Next } from 'koa';
import {
  InvalidContentEncodingError,
  UnsupportedContentEncodingError,
  UnsupportedMediaTypeError,
} from '../../lib/errors';
import type { AppContext } from '../context';

const MUTATING = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);
const JSON_TYPES = ['application/json', 'application/*+json'];
/** The content codings the parser (co-body → inflation) decodes. */
export const SUPPORTED_ENCODINGS = ['gzip', 'deflate', 'br', 'identity'] as const;

/**
 * @param options.limitBytes largest accepted body (after decoding).
 * @param options.rawBody whether a request goes to a route that reads its body itself (uploads): left alone here.
 * @returns the middleware.
 */
export function jsonBody(options: { limitBytes: number; rawBody?: (ctx: AppContext) => boolean }) {
  const parse = bodyParser({
    enableTypes: ['json'],
    jsonLimit: options.limitBytes,
    jsonStrict: true,
    extendTypes: { json: JSON_TYPES },
    // Only failures of reading/decoding/parsing the body arrive here (never the handler's errors).
    onError: (err: unknown, ctx) => {
      throw bodyError(err, ctx.get('content-encoding'));
    },
  });
  return async function jsonBodyMiddleware(ctx: AppContext, next: Next): Promise<void> {
    if (options.rawBody?.(ctx)) return next();
    if (!MUTATING.has(ctx.method) || !hasBody(ctx)) return parse(ctx as never, next);
    if (!ctx.is(...JSON_TYPES)) throw new UnsupportedMediaTypeError();
    // Content codings are case-insensitive (RFC 9110 §8.4.1); the decoder compares them exactly.
    const coding = ctx.get('content-encoding').trim().toLowerCase();
    if (coding === '') delete ctx.req.headers['content-encoding'];
    else if (!(SUPPORTED_ENCODINGS as readonly string[]).includes(coding)) throw new UnsupportedContentEncodingError();
    else ctx.req.headers['content-encoding'] = coding;
    await parse(ctx as never, next);
  };
}

/**
 * A body-reading failure: a decoder (zlib) error on an encoded body is the client's bytes not matching their
 * declared coding (400); anything else (JSON syntax, size, abort) is translated by the error middleware.
 * @param err what the parser threw.
 * @param coding the request's Content-Encoding.
 * @returns the error to throw.
 */
function bodyError(err: unknown, coding: string): unknown {
  const e = (err ?? {}) as { status?: unknown; type?: unknown; errno?: unknown };
  const fromDecoder = typeof e.errno === 'number' && e.status === undefined && e.type === undefined;
  if (fromDecoder && coding !== '' && coding !== 'identity') return new InvalidContentEncodingError(coding);
  return err;
}

function hasBody(ctx: AppContext): boolean {
  const length = ctx.get('content-length');
  if (length !== '') return Number(length) > 0;
  return ctx.get('transfer-encoding') !== '';
}
