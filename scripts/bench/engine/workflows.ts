/**
 * The bare shape of an execution for `npm run bench:engine`: one regular activity (where our model call runs),
 * then one local activity (where our finish runs), with no work in either.
 */
import { proxyActivities, proxyLocalActivities } from '@temporalio/workflow';
import type * as activities from './activities';

const { began } = proxyActivities<typeof activities>({
  startToCloseTimeout: '1 minute',
  heartbeatTimeout: '5 seconds',
});
const { finished } = proxyLocalActivities<typeof activities>({ startToCloseTimeout: '30 seconds' });

/** @param id the run's own id (the activity notes when it began under it). */
export async function bareExecution(id: string): Promise<void> {
  await began(id);
  await finished(id);
}
