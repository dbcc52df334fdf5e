/**
 * createActivities(deps): every activity of the service, grouped one file per concern, over injected dependencies
 * (STYLE "activities are factories over dependencies").
 */
import type { Logger } from '../lib/logger';

export interface ActivityDeps {
  logger: Logger;
}

/**
 * @param _deps logger and other dependencies.
 * @returns the activity functions registered on the worker.
 */
export function createActivities(_deps: ActivityDeps): Record<string, (...args: never[]) => Promise<unknown>> {
  return {};
}
