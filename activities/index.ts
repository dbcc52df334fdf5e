/**
 * createActivities(deps): every activity of the service, grouped one file per concern, over injected dependencies
 * (STYLE "activities are factories over dependencies").
 */
import type { Config } from '../lib/config';
import type { Logger } from '../lib/logger';
import { createExecutionActivities } from './executions';
import { createJobActivities } from './jobs';
import { createWebhookActivities } from './webhooks';

export interface ActivityDeps {
  logger: Logger;
  config: Readonly<Config>;
}

/**
 * @param deps logger and configuration.
 * @returns the activity functions registered on the worker.
 */
export function createActivities(deps: ActivityDeps) {
  return { ...createExecutionActivities(deps), ...createJobActivities(deps), ...createWebhookActivities(deps) };
}
