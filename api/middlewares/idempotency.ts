/**
 * `Idempotency-Key` on the current surface's mutating routes (docs/decisions.md "Idempotency"): mounted right
 * before the handler, after authentication and validation. Without the header the request runs as usual. With it,
 * the first request runs and its answer (2xx–4xx) is stored, sealed, for 24 hours per identity and key; the same request
 * again gets that answer with `Idempotent-Replayed: true`. A server error (5xx) frees the key so a retry runs.
 */
import { createHash } from 'node:crypto';
import type { Next } from 'koa';
import {
  claimIdempotencyKey,
  completeIdempotencyKey,
  releaseIdempotencyKey,
  type StoredResponse,
} from '../../commands/idempotency';
import { ValidationError } from '../../lib/errors';
import type { AppContext } from '../context';
import { renderError, translateError } from './errors';

/** Longest accepted key. */
export const MAX_IDEMPOTENCY_KEY_LENGTH = 255;

/** JSON with object keys sorted, so that two bodies that differ only in key order are the same request. */
function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
  }
  return JSON.stringify(value ?? null);
}

/**
 * @param method HTTP method.
 * @param path request path.
 * @param querystring raw query string.
 * @param body parsed JSON body.
 * @returns the request's fingerprint: one key may only ever answer one request.
 */
export function requestFingerprint(method: string, path: string, querystring: string, body: unknown): string {
  return createHash('sha256')
    .update(`${method} ${path}?${querystring}\n${canonicalJson(body)}`)
    .digest('hex');
}

function fingerprint(ctx: AppContext): string {
  return requestFingerprint(ctx.method, ctx.path, ctx.querystring, (ctx.request as { body?: unknown }).body);
}

/**
 * @param sealKey the key stored answers are sealed with (ENCRYPTION_KEY; commands/idempotency.ts).
 * @returns the middleware.
 */
export function idempotency(sealKey?: Buffer) {
  return async function idempotencyMiddleware(ctx: AppContext, next: Next): Promise<void> {
    if (ctx.headers['idempotency-key'] === undefined) return next();
    const key = ctx.get('idempotency-key');
    if (key.length === 0 || key.length > MAX_IDEMPOTENCY_KEY_LENGTH)
      throw new ValidationError(`Idempotency-Key must be 1 to ${MAX_IDEMPOTENCY_KEY_LENGTH} characters`);
    const claim = await claimIdempotencyKey(ctx.state.auth, key, fingerprint(ctx), sealKey);
    if (claim.replay) {
      ctx.status = claim.replay.status;
      ctx.body = claim.replay.body;
      ctx.set(claim.replay.headers);
      ctx.set('Idempotent-Replayed', 'true');
      return;
    }
    let headers: Record<string, string> = {};
    try {
      await next();
    } catch (err) {
      const known = translateError(err, 0);
      if (!known || known.status >= 500) {
        await releaseIdempotencyKey(claim.id).catch(() => undefined);
        throw err;
      }
      renderError(ctx, known); // the answer a client gets (and will get again) for this 4xx
      headers = known.headers;
    }
    if (ctx.status >= 500) {
      await releaseIdempotencyKey(claim.id);
      return;
    }
    const stored: StoredResponse | 'streamed' =
      ctx.response.type === 'text/event-stream' ? 'streamed' : { status: ctx.status, body: ctx.body, headers };
    await completeIdempotencyKey(claim.id, stored, sealKey);
  };
}
