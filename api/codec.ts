/**
 * The codec endpoint [docs/decisions.md "Observability: private payloads"]: Temporal's codec server protocol, so an
 * operator reads the sealed payloads of this service's workflows in the Temporal Web UI (Settings → Codec Server)
 * or with the temporal CLI (`--codec-endpoint … --codec-auth 'Bearer …'`).
 *
 * `POST /codec/decode` and `POST /codec/encode` take and answer `{payloads: [{metadata: {k: base64}, data: base64}]}`
 * (the JSON form of temporal.api.common.v1.Payload). The caller is the operator: `Authorization: Bearer
 * <TEMPORAL_CODEC_TOKEN>`, or, for a browser UI that cannot send a header, the token as the path segment before
 * the operation (`/codec/<token>/decode`; the request log redacts it). Unset TEMPORAL_CODEC_TOKEN: 404. A browser
 * origin listed in TEMPORAL_CODEC_CORS_ORIGINS may call it (preflight answered here).
 */
import type { Next } from 'koa';
import type { Payload } from '@temporalio/common';
import type { Config } from '../lib/config';
import { safeEqual } from '../lib/crypto';
import { EncryptionCodec } from '../lib/dataConverter';
import { EncryptionUnavailableError, NotFoundError, UnauthorizedError, ValidationError } from '../lib/errors';
import type { AppContext } from './context';
import { route, type RouteSpec } from './route';
import { record, type Validated } from './schemas';

/** Most payloads in one request (the UI sends one history event's at a time). */
const MAX_PAYLOADS = 1000;

const payloadSchema = {
  type: 'object',
  properties: {
    metadata: {
      type: 'object',
      maxProperties: 32,
      additionalProperties: { type: 'string', maxLength: 4096 },
    },
    data: { type: 'string', maxLength: 16 * 1024 * 1024 },
  },
} as const;
const payloadsSchema = record({ payloads: { type: 'array', maxItems: MAX_PAYLOADS, items: payloadSchema } });
/** The codec path's `:token`. */
const tokenParams = record({ token: { type: 'string', maxLength: 512 } });

type JsonPayload = Validated<typeof payloadSchema>;

const fromJson = (p: JsonPayload): Payload => ({
  metadata: Object.fromEntries(Object.entries(p.metadata ?? {}).map(([k, v]) => [k, Buffer.from(v, 'base64')])),
  data: Buffer.from(p.data ?? '', 'base64'),
});
const toJson = (p: Payload): JsonPayload => ({
  metadata: Object.fromEntries(
    Object.entries(p.metadata ?? {}).map(([k, v]) => [k, Buffer.from(v ?? new Uint8Array()).toString('base64')])
  ),
  data: Buffer.from(p.data ?? new Uint8Array()).toString('base64'),
});

/** A path of the codec endpoint carrying its token, for the request log. */
export const CODEC_TOKEN_PATH = /^\/codec\/[^/]+\/(encode|decode)$/;

/**
 * Whether the request carries the codec token (header or path).
 * @param ctx the request.
 * @param token TEMPORAL_CODEC_TOKEN.
 */
function authorize(ctx: AppContext, token: string): void {
  const header = /^Bearer\s+(\S+)$/i.exec(ctx.get('authorization'))?.[1];
  const inPath = (ctx.params as Record<string, string | undefined>).token;
  const given = header ?? inPath;
  if (!given || !safeEqual(given, token)) throw new UnauthorizedError('Invalid or missing codec token');
}

/**
 * CORS for the codec endpoint: the listed origins may call it from a browser; preflights are answered here.
 * @param config TEMPORAL_CODEC_CORS_ORIGINS.
 * @returns the middleware (mounted before the routers).
 */
export function codecCors(config: Pick<Config, 'observability'>) {
  const allowed = new Set(config.observability.codecCorsOrigins);
  return async function codecCorsMiddleware(ctx: AppContext, next: Next): Promise<void> {
    if (!ctx.path.startsWith('/codec/')) return next();
    const origin = ctx.get('origin');
    if (origin && allowed.has(origin)) {
      ctx.set({
        'Access-Control-Allow-Origin': origin,
        'Access-Control-Allow-Credentials': 'true',
        'Access-Control-Allow-Methods': 'POST, OPTIONS',
        'Access-Control-Allow-Headers': 'Authorization, Content-Type, X-Namespace',
        'Access-Control-Max-Age': '600',
        Vary: 'Origin',
      });
    }
    if (ctx.method === 'OPTIONS') {
      ctx.status = 204;
      return;
    }
    await next();
  };
}

/**
 * @param config ENCRYPTION_KEY and TEMPORAL_CODEC_TOKEN.
 * @returns the codec routes (mounted at the root).
 */
export function codecRoutes(config: Pick<Config, 'encryptionKey' | 'observability'>): RouteSpec[] {
  const codec = config.encryptionKey ? new EncryptionCodec(config.encryptionKey) : undefined;
  const routes: RouteSpec[] = [];
  for (const op of ['decode', 'encode'] as const) {
    for (const path of [`/codec/${op}`, `/codec/:token/${op}`]) {
      routes.push(
        route({
          method: 'post',
          path,
          summary:
            op === 'decode'
              ? 'Temporal codec server: open sealed payloads (operators; TEMPORAL_CODEC_TOKEN)'
              : 'Temporal codec server: seal payloads (operators; TEMPORAL_CODEC_TOKEN)',
          tags: ['Operations'],
          auth: 'public',
          ...(path.includes(':token') ? { params: tokenParams } : {}),
          body: payloadsSchema,
          responses: { 200: payloadsSchema },
          errors: [401, 404],
          handler: async (ctx, { body }) => {
            const token = config.observability.codecToken;
            if (!token) throw new NotFoundError('Route not found');
            authorize(ctx, token);
            if (!codec) throw new EncryptionUnavailableError();
            let out: Payload[];
            try {
              out = await codec[op](body.payloads.map(fromJson));
            } catch (err) {
              throw new ValidationError(`Cannot ${op} the payloads: ${(err as Error).message}`);
            }
            ctx.body = { payloads: out.map(toJson) };
          },
        })
      );
    }
  }
  return routes;
}
