/**
 * Schedule policies, skipped runs and backfill of missions on the real servers (docs/schedules.md): the policies
 * (overlap, catch-up window, time zone, pause-on-failure, jitter) created, read and changed on both surfaces and
 * written to the Temporal Schedule, bad values 400 in each surface's error shape; a `skip` overlap with a 3 s run at
 * a 1 s interval recording each skip once as `mission.run_skipped` (and its webhook); a backfill of 3 past slots
 * running exactly 3, with the worker process killed while they run (nothing lost or repeated). The work runs in
 * worker processes (they trust the webhook receiver's certificate), none in the test process.
 */
import { createTemporal, type TemporalDeps } from '../../../lib/temporal';
import { Job, Mission, ServiceEvent } from '../../../models';
import { startWebhookReceiver, type WebhookReceiver } from '../../../scripts/fakes/webhookReceiver';
import { missionScheduleId } from '../../../workflows/ids';
import { currentAs } from '../../helpers/current';
import { bearer, buildAgent, buildOrg } from '../../helpers/factories';
import { useTestDatabase } from '../../helpers/mongo';
import type { Spawned } from '../../helpers/processes';
import { closeAfterAll } from '../../helpers/teardown';
import { until } from '../../helpers/until';
import { v1As } from '../../helpers/v1';
import { startWebhookWorker } from '../../helpers/webhooks';
import { useExecutionStack } from '../../helpers/worker';

jest.setTimeout(150_000);

const db = useTestDatabase();
// Schedule calls on a machine loaded by other test files can pass the default 3 s dependency deadline (as in
// test/api/v1/missions.test.ts).
const stack = useExecutionStack(
  'mission-policies',
  { DEFAULT_MODEL: 'claude-test', WEBHOOK_ALLOW_PRIVATE: 'true', DEPENDENCY_TIMEOUT_MS: '15000' },
  { worker: false }
);
let receiver: WebhookReceiver;
let temporal: TemporalDeps;
const workers: Spawned[] = [];

const startWorker = async (): Promise<Spawned> => {
  const w = await startWebhookWorker({
    mongodbUri: db.uri,
    taskQueue: stack.env.TEMPORAL_TASK_QUEUE,
    caFile: receiver.caFile,
    env: { ...(stack.env as Record<string, string>) },
  });
  workers.push(w);
  return w;
};

beforeAll(async () => {
  receiver = await startWebhookReceiver();
  temporal = createTemporal({ ...stack.t.config, dependencyTimeoutMs: 30_000 });
  await startWorker();
}, 120_000);
closeAfterAll(async () => {
  workers.forEach((w) => w.crash());
  await temporal?.connection.close();
  await receiver?.close();
});

async function setup() {
  const org = await buildOrg();
  const api = currentAs(stack.t, org.serviceToken);
  const agent = await buildAgent(stack.t, org, { name: 'Runner', system_prompt: 'Run.' });
  return { org, api, agent };
}

const describeSchedule = (missionId: string) =>
  temporal.client.schedule.getHandle(missionScheduleId(missionId)).describe();

const skipsOf = async (organizationId: string) =>
  (await ServiceEvent.find({ organizationId, type: 'mission.run_skipped' }).lean()).map((e) => ({
    id: e._id,
    ...(JSON.parse(e.data) as { mission_id: string; reason: string; count: number }),
  }));

it('policies are created, read and changed on both surfaces and on the Schedule; bad values are 400', async () => {
  const { org, api, agent } = await setup();
  const created = await api.post('/missions', {
    title: 'Digest',
    goal: 'Summarize',
    agentType: agent,
    status: 'paused',
    schedule: {
      type: 'cron',
      value: '0 9 * * *',
      timezone: 'Asia/Tokyo',
      overlap: 'skip',
      catchupWindow: '1m',
      pauseOnFailure: true,
      jitter: '5s',
    },
  });
  expect(created.status).toBe(201);
  const id = created.body.mission.id;
  expect(created.body.mission.schedule).toEqual({
    type: 'cron',
    value: '0 9 * * *',
    timezone: 'Asia/Tokyo',
    overlap: 'skip',
    catchupWindow: '1m',
    pauseOnFailure: true,
    jitter: '5s',
  });
  let described = await describeSchedule(id);
  expect(described.policies).toEqual({ overlap: 'SKIP', catchupWindow: 60_000, pauseOnFailure: true });
  expect(described.spec).toMatchObject({ timezone: 'Asia/Tokyo', jitter: 5000 });

  // A schedule without `type` changes only the fields it names; the times stay.
  const patched = await api.patch(`/missions/${id}`, { schedule: { overlap: 'buffer_all', catchupWindow: null } });
  expect(patched.status).toBe(200);
  expect(patched.body.mission.schedule).toEqual({
    type: 'cron',
    value: '0 9 * * *',
    timezone: 'Asia/Tokyo',
    overlap: 'buffer_all',
    catchupWindow: null,
    pauseOnFailure: true,
    jitter: '5s',
  });
  described = await describeSchedule(id);
  expect(described.policies.overlap).toBe('BUFFER_ALL');
  expect(described.policies.catchupWindow).toBe(365.25 * 24 * 3600 * 1000); // Temporal's default again
  expect((await api.get(`/missions/${id}`)).body.mission.schedule.overlap).toBe('buffer_all');
  // An interval schedule keeps the policies it does not name.
  const interval = await api.patch(`/missions/${id}`, { schedule: { type: 'interval', value: '10m', jitter: null } });
  expect(interval.body.mission.schedule).toMatchObject({
    type: 'interval',
    value: '10m',
    overlap: 'buffer_all',
    jitter: null,
  });
  expect((await describeSchedule(id)).spec.intervals).toMatchObject([{ every: 600_000 }]);

  const bad = async (schedule: object, message: RegExp) => {
    const r = await api.post('/missions', { title: 'bad', goal: 'g', agentType: agent, schedule });
    expect([r.status, r.body.error?.code]).toEqual([400, 'validation_failed']);
    expect(r.body.error.message).toMatch(message);
  };
  await bad({ type: 'cron', value: '0 9 * * *', timezone: 'Mars/Olympus' }, /^Invalid schedule\.timezone: /);
  await bad({ type: 'interval', value: '1h', timezone: 'Nowhere/Else' }, /^Invalid schedule\.timezone: /);
  await bad({ type: 'cron', value: '0 9 * * *', overlap: 'sometimes' }, /^Invalid schedule\.overlap/);
  await bad({ type: 'manual', catchupWindow: '5s' }, /^Invalid schedule\.catchupWindow: must be between 10s/);
  await bad({ type: 'manual', catchupWindow: 'soon' }, /^Invalid schedule\.catchupWindow: expected a duration/);
  await bad({ type: 'manual', jitter: '2d' }, /^Invalid schedule\.jitter: /);
  await bad({ type: 'interval', value: '0s' }, /^Invalid schedule\.value: /);
  await bad({ type: 'manual', pauseOnFailure: 'yes' }, /pauseOnFailure/);
  const badPatch = await api.patch(`/missions/${id}`, { schedule: { timezone: 'Mars/Olympus' } });
  expect([badPatch.status, badPatch.body.error.message]).toEqual([
    400,
    'Invalid schedule.timezone: Mars/Olympus is not an IANA time zone',
  ]);
  expect(await Mission.countDocuments({ title: 'bad' })).toBe(0);

  // The v1 surface: the same fields, its own error shape.
  const v1 = v1As(stack.t, org.apiToken);
  const made = await v1.post('/missions', {
    title: 'V1',
    goal: 'g',
    agentType: agent,
    schedule: { type: 'interval', value: '1h', overlap: 'cancel_other', pauseOnFailure: true },
  });
  expect(made.status).toBe(200);
  expect(made.body.mission.schedule).toMatchObject({ type: 'interval', overlap: 'cancel_other', pauseOnFailure: true });
  const v1Patch = await v1.patch(`/missions/${made.body.mission.id}`, { schedule: { overlap: 'terminate_other' } });
  expect(v1Patch.body.mission.schedule.overlap).toBe('terminate_other');
  expect((await describeSchedule(made.body.mission.id)).policies.overlap).toBe('TERMINATE_OTHER');
  const v1Bad = await v1.post('/missions', {
    title: 'bad',
    goal: 'g',
    agentType: agent,
    schedule: { type: 'cron', value: '0 9 * * *', timezone: 'Mars/Olympus' },
  });
  expect(v1Bad.status).toBe(400);
  expect(v1Bad.body).toMatchObject({ error: true, statusCode: 400, statusMessage: 'Bad Request' });
  expect(v1Bad.body.message).toMatch(/^Invalid schedule\.timezone: /);
  const v1BadOverlap = await v1.patch(`/missions/${made.body.mission.id}`, { schedule: { overlap: 'never' } });
  expect([v1BadOverlap.status, v1BadOverlap.body.error]).toEqual([400, true]);
  await v1.patch(`/missions/${made.body.mission.id}`, { status: 'paused' });
});

it('a `skip` overlap with a 3 s run at a 1 s interval records every skip once, as an event and a webhook', async () => {
  const { org, api, agent } = await setup();
  const put = await stack.t.request
    .put('/api/messaging-integration')
    .set('Authorization', bearer(org.serviceToken))
    .send({ url: receiver.url, event_types: ['mission.run_skipped'] });
  expect([put.status, put.body.error]).toEqual([201, undefined]);
  const created = await api.post('/missions', {
    title: 'Busy',
    goal: 'Keep busy [chunks:3] [slow:1500]',
    agentType: agent,
    schedule: { type: 'interval', value: '1s', overlap: 'skip' },
  });
  expect(created.status).toBe(201);
  const id = created.body.mission.id;
  await until(
    () => skipsOf(org.organizationId),
    (s) => s.length >= 3,
    60_000,
    200,
    'three recorded skips'
  );
  expect((await api.patch(`/missions/${id}`, { status: 'paused' })).status).toBe(200);
  // Once no run goes on, every skip the Schedule counted is an event, each once.
  await until(
    () => describeSchedule(id),
    (d) => d.info.runningActions.length === 0,
    30_000
  );
  const counted = (await describeSchedule(id)).info;
  const skips = await until(
    () => skipsOf(org.organizationId),
    (s) => s.length === counted.numActionsSkippedOverlap,
    30_000,
    200,
    'the counted skips'
  );
  expect(skips.map((s) => [s.mission_id, s.reason])).toEqual(skips.map(() => [id, 'overlap']));
  expect(skips.map((s) => s.count).sort((a, b) => a - b)).toEqual(skips.map((_, i) => i + 1));
  expect(counted.numActionsMissedCatchupWindow).toBe(0);
  // The runs that started each made one job (one that started as the pause landed made none).
  const jobs = await Job.find({ organizationId: org.organizationId, missionId: id }).lean();
  expect(jobs.length).toBeGreaterThanOrEqual(1);
  expect(jobs.length).toBeLessThanOrEqual(counted.numActionsTaken);
  expect(await ServiceEvent.countDocuments({ organizationId: org.organizationId, type: 'mission.run_started' })).toBe(
    jobs.length
  );

  // The webhook: one delivery per skip, typed and signed like every other.
  const [delivered] = await receiver.waitFor(skips[0].id, 1, 30_000);
  expect(delivered.headers['service-event-type']).toBe('mission.run_skipped');
  expect(JSON.parse(delivered.body).data).toEqual({ mission_id: id, reason: 'overlap', count: skips[0].count });
  // Read again later: nothing recorded twice.
  await new Promise((r) => setTimeout(r, 1500));
  expect(await skipsOf(org.organizationId)).toHaveLength(skips.length);
});

it('a backfill of 3 past slots runs exactly 3, though the worker is killed while they run; bad ranges are 400', async () => {
  const { org, api, agent } = await setup();
  const created = await api.post('/missions', {
    title: 'Daily',
    goal: 'Catch up [chunks:4] [slow:500]',
    agentType: agent,
    schedule: { type: 'interval', value: '1d' },
  });
  const id = created.body.mission.id;
  const day = 86_400_000;
  const now = Date.now();
  const midnight = Math.floor((now - 5000) / day) * day;
  const slots = [midnight - 2 * day, midnight - day, midnight].map((t) => new Date(t).toISOString());
  const range = {
    start: new Date(midnight - 2 * day - 12 * 3600_000).toISOString(),
    end: new Date(now - 1000).toISOString(),
  };

  const tooMany = await api.post(`/missions/${id}/backfill`, {
    start: new Date(now - 200 * day).toISOString(),
    end: range.end,
  });
  expect([tooMany.status, tooMany.body.error.message]).toEqual([
    400,
    'Invalid range: it holds more than 100 runs of the schedule; backfill a shorter range',
  ]);
  const future = await api.post(`/missions/${id}/backfill`, {
    start: range.start,
    end: new Date(now + day).toISOString(),
  });
  expect([future.status, future.body.error.message]).toEqual([400, 'Invalid end: a backfill covers a past range only']);
  const reversed = await api.post(`/missions/${id}/backfill`, { start: range.end, end: range.start });
  expect(reversed.status).toBe(400);
  const badOverlap = await api.post(`/missions/${id}/backfill`, { ...range, overlap: 'maybe' });
  expect(badOverlap.status).toBe(400);
  const v1 = v1As(stack.t, org.apiToken);
  const v1TooMany = await v1.post(`/missions/${id}/backfill`, {
    start: new Date(now - 200 * day).toISOString(),
    end: range.end,
  });
  expect(v1TooMany.body).toMatchObject({ error: true, statusCode: 400 });

  const res = await api.post(`/missions/${id}/backfill`, { ...range, overlap: 'allow_all' });
  expect(res.status).toBe(202);
  expect(res.body).toEqual({ missionId: id, start: range.start, end: range.end, overlap: 'allow_all', runs: 3 });

  // The worker dies while the runs go on; another one takes over.
  await until(
    () => ServiceEvent.countDocuments({ organizationId: org.organizationId, type: 'mission.run_started' }),
    (n) => n >= 1,
    60_000
  );
  workers[0].crash();
  await workers[0].exited();
  await startWorker();

  const jobs = await until(
    () => Job.find({ organizationId: org.organizationId, missionId: id }).lean(),
    (js) => js.length === 3 && js.every((j) => j.status === 'completed'),
    90_000,
    200,
    'three completed jobs'
  );
  expect(jobs.map((j) => j.missionRunId!.slice(`mission-run-${id}-`.length)).sort()).toEqual(
    slots.map((s) => s.replace('.000Z', 'Z'))
  );
  for (const j of jobs) expect(j.iterations).toHaveLength(1);
  const started = await ServiceEvent.find({ organizationId: org.organizationId, type: 'mission.run_started' }).lean();
  expect(started).toHaveLength(3);
  await new Promise((r) => setTimeout(r, 2000));
  expect(await Job.countDocuments({ organizationId: org.organizationId, missionId: id })).toBe(3);
  expect((await describeSchedule(id)).info.numActionsTaken).toBe(3);
});

it('pause-on-failure: a run whose job fails pauses the mission; its runs then do nothing until resumed', async () => {
  const { org, api, agent } = await setup();
  const created = await api.post('/missions', {
    title: 'Fragile',
    goal: 'Break [fail:400]',
    agentType: agent,
    schedule: { type: 'interval', value: '1h', pauseOnFailure: true },
  });
  const id = created.body.mission.id;
  await temporal.client.schedule.getHandle(missionScheduleId(id)).trigger();
  const paused = await until(
    () => api.get(`/missions/${id}`),
    (r) => r.body.mission?.status === 'paused',
    60_000,
    200,
    'the mission paused'
  );
  expect(paused.body.mission.nextRunTimes).toEqual([]);
  expect((await describeSchedule(id)).policies.pauseOnFailure).toBe(true);
  const [job] = await Job.find({ organizationId: org.organizationId, missionId: id }).lean();
  expect(job.status).toBe('failed');
  const updates = (await ServiceEvent.find({ organizationId: org.organizationId, type: 'mission.updated' }).lean()).map(
    (e) => JSON.parse(e.data) as Record<string, unknown>
  );
  expect(updates).toEqual([expect.objectContaining({ mission_id: id, status: 'paused', reason: 'run_failed' })]);
  // A run fired meanwhile does nothing (the record is paused); resumed through the API like any pause.
  await temporal.client.schedule.getHandle(missionScheduleId(id)).trigger();
  await until(
    () => describeSchedule(id),
    (d) => d.info.numActionsTaken === 2 && d.info.runningActions.length === 0,
    30_000
  );
  expect(await Job.countDocuments({ organizationId: org.organizationId, missionId: id })).toBe(1);
  expect((await api.patch(`/missions/${id}`, { status: 'active' })).body.mission.status).toBe('active');
  expect((await describeSchedule(id)).state.paused).toBe(false);
});
