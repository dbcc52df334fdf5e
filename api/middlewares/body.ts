/**
 * JSON body parsing with a size limit. Only `application/json` (and `+json`) bodies are parsed; a non-empty body
 * of another media type on a mutating request is refused with 415. `Content-Encoding` gzip, deflate and br are
 * decoded (the limit applies to the decoded size: 413 above); any other coding is 415 naming Content-Encoding, and
 * bytes that do not decode as their declared coding are 400 [docs/decisions.md "Bodies"].
 * A JSON body is read here, as bytes (issue 38): decoded as strict UTF-8 (a byte sequence that is not UTF-8 is 400
 * `Invalid JSON in request body`, never stored with replacement characters), its nesting measured by a loop over its
 * text before it is parsed (deeper than {@link MAX_JSON_DEPTH}: 400, before any recursive walk of the value can
 * overflow the stack), then parsed; `__proto__` and `constructor.prototype` keys are refused as before.
 */
import type { IncomingMessage } from 'node:http';
import zlib from 'node:zlib';
import { bodyParser } from '@koa/bodyparser';
import type { Next } from 'koa';
import {
  InvalidContentEncodingError,
  InvalidJsonError,
  PayloadTooLargeError,
  RequestAbortedError,
  UnsupportedContentEncodingError,
  UnsupportedMediaTypeError,
} from '../../lib/errors';
import type { AppContext } from '../context';

const MUTATING = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);
/** The methods whose JSON body is read (as @koa/bodyparser did: a DELETE body is never read). */
const PARSED = new Set(['POST', 'PUT', 'PATCH']);
const JSON_TYPES = ['application/json', 'application/*+json'];
/** The content codings the parser decodes. */
export const SUPPORTED_ENCODINGS = ['gzip', 'deflate', 'br', 'identity'] as const;
/** Deepest nesting of arrays and objects a JSON body may have [docs/decisions.md "Request bodies: depth, UTF-8"]. */
export const MAX_JSON_DEPTH = 64;

/**
 * @param options.limitBytes largest accepted body (after decoding).
 * @param options.rawBody whether a request goes to a route that reads its body itself (uploads): left alone here.
 * @returns the middleware.
 */
export function jsonBody(options: { limitBytes: number; rawBody?: (ctx: AppContext) => boolean }) {
  // Bodyless requests keep the parser's defaults ({} for POST, PUT and PATCH).
  const parse = bodyParser({ enableTypes: ['json'], jsonLimit: options.limitBytes, jsonStrict: true });
  return async function jsonBodyMiddleware(ctx: AppContext, next: Next): Promise<void> {
    if (options.rawBody?.(ctx)) return next();
    if (!MUTATING.has(ctx.method) || !hasBody(ctx)) return parse(ctx as never, next);
    if (!ctx.is(...JSON_TYPES)) throw new UnsupportedMediaTypeError();
    // Content codings are case-insensitive (RFC 9110 §8.4.1).
    const coding = ctx.get('content-encoding').trim().toLowerCase() || 'identity';
    if (!(SUPPORTED_ENCODINGS as readonly string[]).includes(coding)) throw new UnsupportedContentEncodingError();
    if (!PARSED.has(ctx.method)) return next();
    const text = await readText(ctx.req, coding, options.limitBytes);
    const request = ctx.request as { body?: unknown; rawBody?: string };
    request.body = parseJson(text);
    request.rawBody = text;
    await next();
  };
}

/**
 * Reads a request's body, decoded from its content coding, as strict UTF-8.
 * @param req the request.
 * @param coding its content coding (one of {@link SUPPORTED_ENCODINGS}, lower case).
 * @param limitBytes largest decoded size.
 * @returns the text (a byte order mark dropped).
 * @throws PayloadTooLargeError past the limit; InvalidContentEncodingError for bytes that are not their coding;
 *   InvalidJsonError for bytes that are not UTF-8; RequestAbortedError when the client goes away.
 */
async function readText(req: IncomingMessage, coding: string, limitBytes: number): Promise<string> {
  const declared = Number(req.headers['content-length']);
  if (coding === 'identity' && declared > limitBytes) throw new PayloadTooLargeError(limitBytes);
  if (req.readableEnded || req.destroyed) throw new RequestAbortedError();
  const bytes = await new Promise<Buffer>((resolve, reject) => {
    const decoder =
      coding === 'gzip'
        ? zlib.createGunzip()
        : coding === 'deflate'
          ? zlib.createInflate()
          : coding === 'br'
            ? zlib.createBrotliDecompress()
            : undefined;
    const source = decoder ?? req;
    const chunks: Buffer[] = [];
    let size = 0;
    let settled = false;
    const cleanup = () => {
      source.off('data', onData);
      source.off('end', onEnd);
      source.off('error', onSourceError);
      req.off('error', onAbort);
      req.off('close', onClose);
    };
    const fail = (err: unknown) => {
      if (settled) return;
      settled = true;
      cleanup();
      if (decoder) {
        req.unpipe(decoder);
        decoder.destroy();
      }
      req.resume(); // the rest of the body is read and dropped, so that the answer still reaches the client
      reject(err);
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limitBytes) fail(new PayloadTooLargeError(limitBytes));
      else chunks.push(chunk);
    };
    const onEnd = () => {
      if (settled) return;
      settled = true;
      cleanup();
      resolve(Buffer.concat(chunks, size));
    };
    const onSourceError = (err: unknown) => fail(decoder ? new InvalidContentEncodingError(coding) : err);
    const onAbort = () => fail(new RequestAbortedError());
    const onClose = () => {
      if (!req.complete) onAbort();
    };
    source.on('data', onData);
    source.once('end', onEnd);
    source.once('error', onSourceError);
    req.once('error', onAbort);
    req.once('close', onClose);
    if (decoder) req.pipe(decoder);
  });
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    throw new InvalidJsonError();
  }
}

/** RFC 8259 whitespace, then the start of an object or an array. */
const STRICT_START = /^[ \t\n\r]*(\[|\{)/;

/**
 * @param text a body's text.
 * @returns the parsed value ({} for an empty body).
 * @throws InvalidJsonError for text that is not one JSON object or array, nests deeper than {@link MAX_JSON_DEPTH},
 *   or has a `__proto__` key or a `constructor` key holding a `prototype` (prototype poisoning).
 */
export function parseJson(text: string): unknown {
  if (text === '') return {};
  if (!STRICT_START.test(text)) throw new InvalidJsonError();
  if (nestingDepth(text) > MAX_JSON_DEPTH)
    throw new InvalidJsonError(`Invalid JSON in request body: nested deeper than ${MAX_JSON_DEPTH} levels`);
  try {
    if (!/__proto__|constructor/.test(text)) return JSON.parse(text);
    return JSON.parse(text, (key, value: unknown) => {
      if (key === '__proto__') throw new InvalidJsonError();
      if (key === 'constructor' && value !== null && typeof value === 'object' && Object.hasOwn(value, 'prototype'))
        throw new InvalidJsonError();
      return value;
    });
  } catch (err) {
    if (err instanceof InvalidJsonError) throw err;
    throw new InvalidJsonError();
  }
}

/**
 * The deepest nesting of arrays and objects in a JSON text, by one loop over its characters (no recursion); string
 * contents (escapes included) are skipped. Text that is not JSON gets some number: the parse refuses it after.
 * @param text the text.
 * @returns the depth (0 for a scalar).
 */
export function nestingDepth(text: string): number {
  let depth = 0;
  let deepest = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22) {
      // a string: skip to its closing quote
      for (i++; i < text.length; i++) {
        const s = text.charCodeAt(i);
        if (s === 0x5c) i++;
        else if (s === 0x22) break;
      }
    } else if (c === 0x5b || c === 0x7b) {
      depth++;
      if (depth > deepest) deepest = depth;
    } else if (c === 0x5d || c === 0x7d) depth--;
  }
  return deepest;
}

function hasBody(ctx: AppContext): boolean {
  const length = ctx.get('content-length');
  if (length !== '') return Number(length) > 0;
  return ctx.get('transfer-encoding') !== '';
}
