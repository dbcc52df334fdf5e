/**
 * @module missionSkips: the check of a mission's skipped runs after its runs end (workflow id
 * `mission-skips-<missionId>`), started or signalled by each run's last activity [docs/decisions.md "Schedule
 * policies"]. A run cannot see the skips the scheduler makes between its own last step and its close (the scheduler
 * counts it running until then), so the check waits a little on a durable timer, when the run is closed, and then
 * records what the Schedule counted (activities/missions.ts `recordMissionSkips`, keyed per skip: a repeat records
 * nothing). A signal during the wait (another run ended) makes it wait and read once more; it ends when idle.
 */
import { continueAsNew, proxyActivities, setHandler, sleep } from '@temporalio/workflow';
import type { MissionActivities } from '../activities/missions';
import { missionRunEndedSignal } from './definitions';

export interface MissionSkipsInput {
  missionId: string;
}

/** How long after a run's end the Schedule's counters are read (the run has closed by then). */
export const SKIP_CHECK_DELAY = '3 seconds';
/** Readings per workflow run before it continues as new (a short history for a mission that runs every second). */
const READINGS_PER_RUN = 100;

const { recordMissionSkips } = proxyActivities<MissionActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '500 milliseconds', maximumAttempts: 20 },
});

/**
 * @param input the mission.
 */
export async function missionSkips(input: MissionSkipsInput): Promise<void> {
  let again = true;
  setHandler(missionRunEndedSignal, () => {
    again = true;
  });
  for (let n = 0; again; n++) {
    if (n === READINGS_PER_RUN) await continueAsNew<typeof missionSkips>(input);
    again = false;
    await sleep(SKIP_CHECK_DELAY);
    await recordMissionSkips({ missionId: input.missionId });
  }
}
