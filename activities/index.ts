/**
 * createActivities(deps): every activity of the service, grouped one file per concern, over injected dependencies
 * (STYLE "activities are factories over dependencies").
 */
import type { Client } from '@temporalio/client';
import type { EventDeps } from '../commands/serviceEvents';
import type { Config } from '../lib/config';
import { configureRetention } from '../lib/expiry';
import type { Logger } from '../lib/logger';
import { createExecutionActivities } from './executions';
import { createJobActivities } from './jobs';
import { createWebhookActivities } from './webhooks';
import { createMissionActivities } from './missions';
import { createRepoActivities } from './repos';

/** Logger, configuration, and the dispatcher of the service events activities record (worker/create.ts). */
export interface ActivityDeps extends EventDeps {
  logger: Logger;
  config: Readonly<Config>;
  /** The service process's eager-start client (activities/executions.ts `ExecutionActivityDeps`). */
  eagerClient?: Client;
}

/**
 * @param deps logger, configuration (its retention becomes this process's) and the event dispatcher.
 * @returns the activity functions registered on the worker.
 */
export function createActivities(deps: ActivityDeps) {
  // What activities write (stream events, the delivery log) expires after the configured retention.
  configureRetention(deps.config.retention);
  return {
    ...createExecutionActivities(deps),
    ...createJobActivities(deps),
    ...createMissionActivities(deps),
    ...createWebhookActivities(deps),
    ...createRepoActivities(deps),
  };
}
