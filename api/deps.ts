/**
 * The dependencies createApp hands the routers (docs/architecture.md §3): a router takes its type from here, never from
 * app.ts, so the arrows inside api/ point one way. Imports nothing of api/.
 */
import type { EventDispatcher } from '../commands/serviceEvents';
import type { Config } from '../lib/config';
import type { EventTailer } from '../commands/eventLog';
import type { ExecutionAdmission } from '../lib/executionAdmission';
import type { Logger } from '../lib/logger';
import type { TemporalDeps } from '../lib/temporal';

export interface AppDeps {
  config: Readonly<Config>;
  logger: Logger;
  temporal: TemporalDeps;
  /** Aborted when the process starts shutting down: long-lived responses (SSE) end on it. */
  shutdown: AbortSignal;
  /** This process's tailer of the durable event log (one per api process, shared by every stream). */
  events: EventTailer;
  /** This process's admission of executions (lib/executionAdmission.ts); createApp makes one when none is given. */
  admission?: ExecutionAdmission;
  /**
   * Signals the webhook deliveries of the service events the routes record (commands/webhookDispatch.ts); createApp
   * makes one over `temporal` when none is given.
   */
  dispatchEvent?: EventDispatcher;
}

/** What the routes that start, await or stream executions use (both surfaces and the MCP endpoint). */
export type ExecutionRouteDeps = Pick<
  AppDeps,
  'config' | 'temporal' | 'events' | 'shutdown' | 'admission' | 'dispatchEvent'
>;
