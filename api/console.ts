/**
 * The console (console/, built by scripts/lib/consoleBuild.ts into CONSOLE_DIR) served by the service itself:
 * GET/HEAD of `/` and of every path that no route of the service owns (the chatUrl form
 * `/<org>/spaces/<spaceId>/chats/<chatId>` among them) answer the app's index.html, which is never cached; its
 * hashed files under `/assets/` are cached for a year. Paths whose first segment belongs to a route of the service
 * (`/api`, `/mcp`, `/.well-known`, `/metrics`, `/healthz`, `/readyz`, `/oauth`, …) never reach the console: their
 * 404 stays the service's JSON error.
 *
 * The files served are the build's own listing, read once per build (its build-info.json changing means a new
 * build): a request path is looked up in that list and never joined onto a directory. Compressed copies made by the
 * build (`.br`, `.gz`) are sent to browsers that accept them. No build: a 503 page that says how to build it.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import type { Next } from 'koa';
import mime from 'mime-types';
import type { AppContext } from './context';
import type { RouteGroup } from './openapi';

/**
 * The console's Content-Security-Policy: scripts and everything else from this origin only (no inline or eval'd
 * script), inline styles allowed (the component library sets CSS variables and style attributes), no framing.
 */
export const CONSOLE_CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "font-src 'self'",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

/** First path segments the service's own routes keep, whatever the route groups declare. */
const ALWAYS_RESERVED = ['api', 'mcp', 'mcp-app', '.well-known', 'metrics', 'healthz', 'readyz', 'oauth'];

/**
 * @param groups every mounted route group.
 * @returns the first path segments owned by a route of the service (never served by the console).
 */
export function reservedSegments(groups: RouteGroup[]): Set<string> {
  const segments = new Set(ALWAYS_RESERVED);
  for (const group of groups) {
    for (const route of group.routes) {
      const first = `${group.prefix}${route.path}`.split('/')[1];
      if (first && !first.startsWith(':')) segments.add(first);
    }
  }
  return segments;
}

interface ConsoleFile {
  file: string;
  type: string;
  /** Compressed copies beside it. */
  br: boolean;
  gz: boolean;
  /** Its bytes (and its compressed copies'), read on first use. */
  bytes: Map<string, Buffer>;
}

interface ConsoleBuild {
  /** The build-info file's modification time: a new build changes it. */
  stamp: number;
  etag: string;
  files: Map<string, ConsoleFile>;
}

function listFiles(dir: string, base = dir): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory()
      ? e.name.startsWith('.')
        ? []
        : listFiles(path.join(dir, e.name), base)
      : [path.relative(base, path.join(dir, e.name)).split(path.sep).join('/')]
  );
}

/**
 * @param dir the build's directory.
 * @param stamp its build-info's modification time.
 * @returns the files it serves, by URL path.
 */
function readBuild(dir: string, stamp: number): ConsoleBuild {
  const all = listFiles(dir);
  const present = new Set(all);
  const files = new Map<string, ConsoleFile>();
  for (const rel of all) {
    if (rel.endsWith('.br') || rel.endsWith('.gz') || rel === 'build-info.json') continue;
    files.set(`/${rel}`, {
      file: path.join(dir, rel),
      type: mime.contentType(path.extname(rel)) || 'application/octet-stream',
      br: present.has(`${rel}.br`),
      gz: present.has(`${rel}.gz`),
      bytes: new Map(),
    });
  }
  const info = JSON.parse(readFileSync(path.join(dir, 'build-info.json'), 'utf8')) as { hash?: string };
  return { stamp, etag: `"${info.hash ?? stamp}"`, files };
}

/** What a browser gets while the console has not been built. */
const NOT_BUILT =
  '<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Console not built</title></head><body>' +
  '<h1>The console is not built</h1><p>Build it with <code>npm run build</code> (or start the service with ' +
  '<code>npm run dev</code>, which builds it), then reload this page. The API is served as usual under ' +
  '<code>/api</code>.</p></body></html>';

/**
 * @param options `dir`: the console's built files (CONSOLE_DIR); `reserved`: first path segments owned by the
 *   service's routes.
 * @returns the middleware; mount it after every router (it answers only what no route answered).
 */
export function serveConsole(options: { dir: string; reserved: Set<string> }) {
  let build: ConsoleBuild | undefined;
  const current = (): ConsoleBuild | undefined => {
    let stamp: number;
    try {
      stamp = statSync(path.join(options.dir, 'build-info.json')).mtimeMs;
    } catch {
      build = undefined;
      return undefined;
    }
    if (build?.stamp !== stamp) build = readBuild(options.dir, stamp);
    return build;
  };

  return async function consoleMiddleware(ctx: AppContext, next: Next): Promise<void> {
    await next();
    if (ctx.method !== 'GET' && ctx.method !== 'HEAD') return;
    if (ctx.body !== undefined || ctx.status !== 404) return; // a route answered
    const first = ctx.path.split('/')[1] ?? '';
    if (options.reserved.has(first)) return;

    ctx.set('Content-Security-Policy', CONSOLE_CSP);
    ctx.set('X-Content-Type-Options', 'nosniff');
    ctx.set('Referrer-Policy', 'strict-origin-when-cross-origin');
    ctx.set('X-Frame-Options', 'DENY');
    const served = current();
    if (!served) {
      ctx.status = 503;
      ctx.set('Cache-Control', 'no-store');
      ctx.type = 'text/html; charset=utf-8';
      ctx.body = NOT_BUILT;
      return;
    }
    const asset = served.files.get(ctx.path);
    // A missing hashed file is a 404 (an old page asking for a file of an earlier build), not the app.
    if (!asset && first === 'assets') return;
    const file = asset && ctx.path !== '/index.html' ? asset : served.files.get('/index.html');
    if (!file) return;
    const immutable = first === 'assets';
    ctx.set('Cache-Control', immutable ? 'public, max-age=31536000, immutable' : 'no-cache');
    ctx.set('Vary', 'Accept-Encoding');
    ctx.status = 200;
    if (!immutable) {
      ctx.etag = served.etag;
      if (ctx.fresh) {
        ctx.status = 304;
        return;
      }
    }
    const encoding = ctx.acceptsEncodings('br', 'gzip', 'identity');
    const suffix = encoding === 'br' && file.br ? '.br' : encoding === 'gzip' && file.gz ? '.gz' : '';
    let body = file.bytes.get(suffix);
    if (!body) file.bytes.set(suffix, (body = readFileSync(`${file.file}${suffix}`)));
    ctx.type = file.type;
    if (suffix) ctx.set('Content-Encoding', suffix === '.br' ? 'br' : 'gzip');
    ctx.body = body;
  };
}
