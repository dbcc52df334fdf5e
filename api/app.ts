/**
 * createApp(deps): the Koa application without listen() (tests drive it over real HTTP with supertest).
 * Middleware order: requestId → errorHandler → JSON body → routers (health, v1, current).
 */
import Koa from 'koa';
import type { Config } from '../lib/config';
import type { EventTailer } from '../lib/eventLog';
import type { Logger } from '../lib/logger';
import type { TemporalDeps } from '../lib/temporal';
import type { AppState } from './context';
import { currentRouter } from './current';
import { healthRouter } from './health';
import { jsonBody } from './middlewares/body';
import { errorHandler } from './middlewares/errors';
import { requestId } from './middlewares/requestId';
import { v1Router } from './v1';

export interface AppDeps {
  config: Readonly<Config>;
  logger: Logger;
  temporal: TemporalDeps;
  /** Aborted when the process starts shutting down: long-lived responses (SSE) end on it. */
  shutdown: AbortSignal;
  /** This process's tailer of the durable event log (one per api process, shared by every stream). */
  events: EventTailer;
}

/**
 * @param deps configuration, logger, Temporal client, event tailer and the shutdown signal.
 * @returns the Koa app.
 */
export function createApp(deps: AppDeps): Koa<AppState> {
  const app = new Koa<AppState>();
  app.use(requestId(deps.logger));
  app.use(errorHandler({ bodyLimitBytes: deps.config.bodyLimitBytes }));
  app.use(jsonBody({ limitBytes: deps.config.bodyLimitBytes }));
  for (const router of [healthRouter(deps), v1Router(deps), currentRouter(deps)]) app.use(router.routes());
  app.on('error', (err: unknown) => deps.logger.warn({ err }, 'response error'));
  return app;
}
