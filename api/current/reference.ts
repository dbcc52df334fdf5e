/**
 * The interactive reference (`GET /api/reference`): Swagger UI rendering `/api/openapi.json`, with every asset
 * served by the service itself from the `swagger-ui-dist` package, so it works with no network. The page's
 * Content-Security-Policy allows nothing but this origin (Swagger UI needs inline styles and data: images).
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { NotFoundError } from '../../lib/errors';
import type { AppContext } from '../context';

/** The assets the page loads, by the name it uses, with their content type. */
const ASSETS: Record<string, string> = {
  'swagger-ui.css': 'text/css; charset=utf-8',
  'swagger-ui-bundle.js': 'application/javascript; charset=utf-8',
  'favicon-32x32.png': 'image/png',
};

/** Starts Swagger UI on the document next to the page (relative addresses: the page works behind any prefix). */
const INIT_SCRIPT = `window.addEventListener('load', function () {
  window.ui = SwaggerUIBundle({
    url: new URL('openapi.json', window.location.href).href,
    dom_id: '#reference',
    deepLinking: true,
    validatorUrl: null,
    tryItOutEnabled: false,
    persistAuthorization: false,
  });
});
`;

const PAGE = `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <title>Agent Automation Service — API reference</title>
  <link rel="icon" type="image/png" href="reference/assets/favicon-32x32.png">
  <link rel="stylesheet" href="reference/assets/swagger-ui.css">
</head>
<body>
  <div id="reference"></div>
  <script src="reference/assets/swagger-ui-bundle.js"></script>
  <script src="reference/assets/init.js"></script>
</body>
</html>
`;

const CSP = [
  "default-src 'self'",
  "img-src 'self' data:",
  "style-src 'self' 'unsafe-inline'",
  "script-src 'self'",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "frame-ancestors 'none'",
].join('; ');

/** Where the package's files are. */
const DIST = path.dirname(require.resolve('swagger-ui-dist/package.json'));
const cache = new Map<string, Buffer>();

function asset(name: string): Buffer {
  let body = cache.get(name);
  if (!body) {
    body = name === 'init.js' ? Buffer.from(INIT_SCRIPT) : readFileSync(path.join(DIST, name));
    cache.set(name, body);
  }
  return body;
}

/** @param ctx answers the reference page. */
export function servePage(ctx: AppContext): void {
  ctx.set('Content-Security-Policy', CSP);
  ctx.set('Cache-Control', 'no-cache');
  ctx.type = 'text/html; charset=utf-8';
  ctx.body = PAGE;
}

/**
 * @param ctx answers one asset of the page.
 * @param name the asset's file name.
 */
export function serveAsset(ctx: AppContext, name: string): void {
  const type = name === 'init.js' ? 'application/javascript; charset=utf-8' : ASSETS[name];
  if (!type) throw new NotFoundError('Asset not found');
  ctx.set('Cache-Control', 'public, max-age=86400');
  ctx.type = type;
  ctx.body = asset(name);
}

/** Names an asset route accepts. */
export const ASSET_NAMES = [...Object.keys(ASSETS), 'init.js'];
