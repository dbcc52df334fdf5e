/**
 * Runs missed while the engine was down (docs/schedules.md): this file runs its own Temporal dev server (a temporary
 * data directory and a free port, never the suite's shared one) and a real worker process. A mission runs every 2 s
 * with a 10 s catch-up window (Temporal's smallest); the worker and then the Temporal server are killed (SIGKILL) and
 * the server stays down for 25 s, longer than the window. After the restart the Schedule counts the times older
 * than the window as missed and starts the others; each missed run becomes one `mission.run_skipped` event with
 * the reason `missed_catchup_window`, recorded once though several runs and a second worker read the counters.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadToolConfig } from '../../lib/config';
import { createTemporal, type TemporalDeps } from '../../lib/temporal';
import { ServiceEvent } from '../../models';
import { ensureTemporalCli } from '../../scripts/servers/binaries';
import { freePort, startTemporal, type RunningServer } from '../../scripts/servers/launch';
import { missionScheduleId } from '../../workflows/ids';
import { currentAs } from '../helpers/current';
import { childTestEnv, testConfig } from '../helpers/env';
import { buildAgent, buildOrg } from '../helpers/factories';
import { useTestDatabase } from '../helpers/mongo';
import { killHard, spawnScript, type Spawned } from '../helpers/processes';
import { closeAfterAll } from '../helpers/teardown';
import { until } from '../helpers/until';
import { useExecutionStack } from '../helpers/worker';

jest.setTimeout(180_000);

const db = useTestDatabase();
const namespace = testConfig().temporalNamespace;
let dataDir: string;
let bin: string;
let port: number;
let server: RunningServer | undefined;
const workers: Spawned[] = [];

const startServer = (): Promise<RunningServer> => startTemporal({ bin, dataDir, port, namespace });

beforeAll(async () => {
  dataDir = mkdtempSync(path.join(os.tmpdir(), 'aas-mission-catchup-'));
  bin = await ensureTemporalCli(loadToolConfig(), () => undefined);
  port = await freePort();
  server = await startServer();
}, 150_000);
// The api and the test's client use this file's Temporal server; the work runs in worker processes only.
const stack = useExecutionStack(
  'mission-catchup',
  () => ({ DEFAULT_MODEL: 'claude-test', TEMPORAL_ADDRESS: server!.address }),
  { worker: false }
);
let temporal: TemporalDeps;
beforeAll(() => {
  temporal = createTemporal({ ...stack.t.config, dependencyTimeoutMs: 30_000 });
});
closeAfterAll(async () => {
  workers.forEach((w) => w.crash());
  await temporal?.connection.close();
  await server?.stop();
  rmSync(dataDir, { recursive: true, force: true });
});

const startWorker = async (): Promise<Spawned> => {
  const w = spawnScript(
    'worker/index.ts',
    childTestEnv({
      ...(stack.env as Record<string, string>),
      MONGODB_URI: db.uri,
      WORKFLOW_BUNDLE: process.env.AAS_WORKFLOW_BUNDLE ?? '',
    })
  );
  workers.push(w);
  await w.waitFor(/worker started/, 90_000);
  return w;
};

it('runs missed while the engine was down past the catch-up window are each recorded once as skipped', async () => {
  await startWorker();
  const org = await buildOrg();
  const api = currentAs(stack.t, org.serviceToken);
  const agent = await buildAgent(stack.t, org, { name: 'Tick', system_prompt: 'Tick.' });
  const created = await api.post('/missions', {
    title: 'Ticker',
    goal: 'Tick',
    agentType: agent,
    schedule: { type: 'interval', value: '2s', catchupWindow: '10s' },
  });
  expect(created.status).toBe(201);
  const id = created.body.mission.id;
  const handle = () => temporal.client.schedule.getHandle(missionScheduleId(id));
  await until(
    () => ServiceEvent.countDocuments({ organizationId: org.organizationId, type: 'mission.run_started' }),
    (n) => n >= 1,
    60_000
  );

  // The service's worker, then the engine, die; the engine stays down longer than the window.
  workers[0].crash();
  await workers[0].exited();
  await killHard(server!.child.pid!);
  server = undefined;
  await new Promise((r) => setTimeout(r, 25_000));
  server = await startServer(); // the same port and SQLite file
  await startWorker();

  const info = await until(
    async () => (await handle().describe()).info,
    (i) => i.numActionsMissedCatchupWindow > 0,
    60_000,
    500,
    'missed runs counted'
  );
  expect(info.numActionsMissedCatchupWindow).toBeGreaterThanOrEqual(3);
  // The runs started after the restart record what was missed; a second worker's start-up pass reads it again.
  const missed = async () =>
    (await ServiceEvent.find({ organizationId: org.organizationId, type: 'mission.run_skipped' }).lean()).map(
      (e) => JSON.parse(e.data) as { mission_id: string; reason: string; count: number }
    );
  await until(
    async () => ({ events: await missed(), info: (await handle().describe()).info }),
    (r) => r.events.length > 0 && r.events.length === r.info.numActionsMissedCatchupWindow,
    60_000,
    500,
    'every missed run recorded'
  );
  await api.patch(`/missions/${id}`, { status: 'paused' });
  await startWorker();
  await new Promise((r) => setTimeout(r, 2000));
  const events = await missed();
  const final = (await handle().describe()).info;
  expect(events).toHaveLength(final.numActionsMissedCatchupWindow);
  expect(events.map((e) => [e.mission_id, e.reason])).toEqual(events.map(() => [id, 'missed_catchup_window']));
  expect(events.map((e) => e.count).sort((a, b) => a - b)).toEqual(events.map((_, i) => i + 1));
  expect(final.numActionsSkippedOverlap).toBe(0);
});
