/**
 * Types of the Koa context shared by every middleware and route.
 */
import type { RouterContext, Router } from '@koa/router';
import type { AuthContext } from '../commands/tokens';
import type { Logger } from '../lib/logger';

/** Per-request state (Koa's recommended namespace for data passed between middleware). */
export interface AppState {
  requestId: string;
  log: Logger;
  /** Set by the auth middleware. */
  auth: AuthContext;
  /** The MCP endpoint's bearer: the OAuth client (or the service token) the request came through (api/mcp/auth.ts). */
  mcpClientId?: string;
  /** Validated request input, set by validate(). */
  input: { body?: unknown; query?: unknown; params?: unknown };
}

export type AppContext = RouterContext<AppState>;
export type AppRouter = Router<AppState>;

/**
 * Which error envelope a path uses: `v1` under /api/v1; `oauth` (`{error, error_description}`, the body the OAuth
 * specifications fix) on the authorization server's endpoints and the MCP endpoint [docs/decisions.md "MCP and
 * OAuth"]; `current` everywhere else.
 */
export type Surface = 'v1' | 'current' | 'oauth';

/**
 * @param path request path.
 * @returns the path's surface.
 */
export function surfaceOf(path: string): Surface {
  if (path === '/api/v1' || path.startsWith('/api/v1/')) return 'v1';
  if (path === '/mcp' || path.startsWith('/oauth/')) return 'oauth';
  return 'current';
}
