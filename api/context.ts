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
  /** Validated request input, set by validate(). */
  input: { body?: unknown; query?: unknown; params?: unknown };
}

export type AppContext = RouterContext<AppState>;
export type AppRouter = Router<AppState>;

/** Which error envelope a path uses. */
export type Surface = 'v1' | 'current';

/**
 * @param path request path.
 * @returns `v1` under /api/v1, else `current`.
 */
export function surfaceOf(path: string): Surface {
  return path === '/api/v1' || path.startsWith('/api/v1/') ? 'v1' : 'current';
}
