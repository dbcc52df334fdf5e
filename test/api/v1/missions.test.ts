/**
 * /api/v1/missions on the real servers: the current surface's missions (one record, one Temporal Schedule
 * `mission-<id>` each) in the v1 envelopes and errors: create with its Schedule and next run times, list (paged,
 * status filter), read, PATCH pausing and resuming the Schedule, DELETE removing the Schedule and the record;
 * validation in the v1 error shape; who may delete; another organization's 404 on every route; one record seen by
 * both surfaces.
 */
import { ScheduleNotFoundError } from '@temporalio/client';
import { createTemporal, type TemporalDeps } from '../../../lib/temporal';
import { Mission } from '../../../models';
import { missionScheduleId } from '../../../workflows/ids';
import { currentAs } from '../../helpers/current';
import { buildMember, buildOrg } from '../../helpers/factories';
import { useTestDatabase } from '../../helpers/mongo';
import { v1As, v1Error } from '../../helpers/v1';
import { useExecutionStack } from '../../helpers/worker';

useTestDatabase();
// Schedule calls on a machine loaded by other test files can pass the default 3 s dependency deadline.
const stack = useExecutionStack('v1-missions', { DEFAULT_MODEL: 'claude-test', DEPENDENCY_TIMEOUT_MS: '15000' });
/** The test's own Temporal client for its direct Schedule reads (a loaded server may need longer than the app's). */
let temporal: TemporalDeps;
beforeAll(() => {
  temporal = createTemporal({ ...stack.t.config, dependencyTimeoutMs: 30_000 });
});
afterAll(async () => {
  await temporal?.connection.close();
});

const describeSchedule = (id: string) => temporal.client.schedule.getHandle(missionScheduleId(id)).describe();

async function setup() {
  const org = await buildOrg();
  const api = v1As(stack.t, org.apiToken);
  const agent = (await api.post('/agents', { name: 'Planner', systemPrompt: 'Plan.' })).body.id as string;
  return { org, api, agent };
}

it('creates a mission with its Schedule, reads and lists it, pauses and resumes it, deletes it', async () => {
  const { org, api, agent } = await setup();
  const res = await api.post('/missions', {
    title: 'Weekly digest',
    goal: 'Summarize the week',
    agentType: agent,
    schedule: { type: 'cron', value: '0 9 * * 1', timezone: 'Europe/Paris' },
  });
  expect(res.status).toBe(200);
  const mission = res.body.mission;
  expect(res.body.success).toBe(true);
  expect(mission).toMatchObject({
    id: expect.stringMatching(/^msn_/),
    organizationId: org.organizationId,
    userId: org.userId,
    title: 'Weekly digest',
    goal: 'Summarize the week',
    agentType: agent,
    agentId: agent,
    status: 'active',
    schedule: { type: 'cron', value: '0 9 * * 1', timezone: 'Europe/Paris' },
  });
  expect(mission.nextRunTimes.length).toBeGreaterThan(0);
  const described = await describeSchedule(mission.id);
  expect([described.spec.timezone, described.state.paused]).toEqual(['Europe/Paris', false]);
  expect(described.action).toMatchObject({ workflowType: 'missionRun' });

  expect((await api.get(`/missions/${mission.id}`)).body).toEqual({ success: true, mission });
  // One record, both surfaces.
  expect((await currentAs(stack.t, org.serviceToken).get(`/missions/${mission.id}`)).body.mission).toEqual(mission);

  const manual = (await api.post('/missions', { title: 'On demand', goal: 'g', agentType: agent })).body.mission;
  expect(manual).toMatchObject({ schedule: { type: 'manual', value: null, timezone: 'UTC' }, nextRunTimes: [] });
  const list = (await api.get('/missions?limit=1')).body;
  expect(list).toEqual({
    success: true,
    missions: [{ ...manual, nextRunTimes: null }],
    nextCursor: expect.any(String),
  });
  const rest = (await api.get(`/missions?limit=1&cursor=${list.nextCursor}`)).body;
  expect([rest.missions.map((m: { id: string }) => m.id), rest.nextCursor]).toEqual([[mission.id], null]);

  const paused = (await api.patch(`/missions/${mission.id}`, { status: 'paused', title: 'Paused digest' })).body;
  expect(paused.success).toBe(true);
  expect(paused.mission).toMatchObject({ status: 'paused', title: 'Paused digest', nextRunTimes: [] });
  expect((await describeSchedule(mission.id)).state.paused).toBe(true);
  expect((await api.get('/missions?status=paused')).body.missions.map((m: { id: string }) => m.id)).toEqual([
    mission.id,
  ]);
  const resumed = (await api.patch(`/missions/${mission.id}`, { status: 'active' })).body.mission;
  expect(resumed.nextRunTimes.length).toBeGreaterThan(0);
  expect((await describeSchedule(mission.id)).state.paused).toBe(false);

  const deleted = await api.del(`/missions/${mission.id}`);
  expect(deleted.body).toEqual({ success: true, message: 'Mission deleted successfully' });
  await expect(describeSchedule(mission.id)).rejects.toBeInstanceOf(ScheduleNotFoundError);
  expect((await api.get(`/missions/${mission.id}`)).body).toEqual(v1Error(404, 'Not Found', 'Mission not found'));
  expect((await api.del(`/missions/${mission.id}`)).status).toBe(404);
  expect(await Mission.countDocuments({ _id: mission.id })).toBe(0);
}, 60_000);

it('400 in the v1 error shape for bad input; nothing is created', async () => {
  const { org, api, agent } = await setup();
  const cases: Array<[object, string | RegExp]> = [
    [{ goal: 'g', agentType: agent }, 'Missing required field: title'],
    [{ title: 't', agentType: agent }, 'Missing required field: goal'],
    [{ title: 't', goal: 'g' }, 'Missing required field: agentType'],
    [
      { title: 't', goal: 'g', agentType: 'agt_nope' },
      /^Invalid agentType: must be an agent id of the organization or a library agent: general, /,
    ],
    [{ title: 't', goal: 'g', agentType: agent, status: 'done' }, 'Invalid status. Must be: active, paused'],
    [
      { title: 't', goal: 'g', agentType: agent, schedule: { type: 'cron', value: '61 * * * *' } },
      /^Invalid schedule\.value: /,
    ],
    [
      {
        title: 't',
        goal: 'g',
        agentType: agent,
        schedule: { type: 'cron', value: '0 9 * * *', timezone: 'Mars/Base' },
      },
      /^Invalid schedule\.timezone: /,
    ],
    [{ title: 't', goal: 'g', agentType: agent, schedule: { type: 'cron' } }, 'Missing required field: schedule.value'],
    [{ title: 't', goal: 'g', agentType: agent, userId: 'usr_x' }, 'Unknown field: userId'],
  ];
  for (const [body, message] of cases) {
    const res = await api.post('/missions', body);
    expect(res.status).toBe(400);
    expect(res.body).toEqual({
      error: true,
      statusCode: 400,
      statusMessage: 'Bad Request',
      message: expect.anything(),
    });
    if (typeof message === 'string') expect(res.body.message).toBe(message);
    else expect(res.body.message).toMatch(message);
  }
  expect(await Mission.countDocuments({ organizationId: org.organizationId })).toBe(0);
  const mission = (await api.post('/missions', { title: 't', goal: 'g', agentType: agent })).body.mission;
  const bad = await api.patch(`/missions/${mission.id}`, { schedule: { type: 'once', value: 'tomorrow' } });
  expect(bad.body.message).toMatch(/^Invalid schedule\.value: /);
  expect((await api.patch(`/missions/${mission.id}`, { agentType: agent })).body.message).toBe(
    'Unknown field: agentType'
  );
}, 30_000);

it('another organization gets 404 on every route and cannot aim a mission at this one’s agent', async () => {
  const { api, agent } = await setup();
  const mission = (await api.post('/missions', { title: 't', goal: 'g', agentType: agent })).body.mission;
  const other = await buildOrg();
  const them = v1As(stack.t, other.apiToken);
  for (const r of [
    await them.get(`/missions/${mission.id}`),
    await them.patch(`/missions/${mission.id}`, { status: 'paused' }),
    await them.del(`/missions/${mission.id}`),
  ])
    expect([r.status, r.body]).toEqual([404, v1Error(404, 'Not Found', 'Mission not found')]);
  expect((await them.get('/missions')).body.missions).toEqual([]);
  const foreign = await them.post('/missions', { title: 't', goal: 'g', agentType: agent });
  expect(foreign.body).toEqual(
    v1Error(400, 'Bad Request', expect.stringMatching(/^Invalid agentType: must be an agent id of the organization/))
  );
  expect((await api.get(`/missions/${mission.id}`)).body.mission.status).toBe('active');
  expect((await describeSchedule(mission.id)).state.paused).toBe(false);
}, 30_000);

it('members may update a mission; only its creator, owners and admins delete it', async () => {
  const { org, api, agent } = await setup();
  const member = await buildMember(org.organizationId);
  const mission = (await api.post('/missions', { title: 't', goal: 'g', agentType: agent })).body.mission;
  const asMember = v1As(stack.t, member.apiToken);
  expect((await asMember.patch(`/missions/${mission.id}`, { goal: 'g2' })).body.mission.goal).toBe('g2');
  expect((await asMember.del(`/missions/${mission.id}`)).body).toEqual(
    v1Error(403, 'Forbidden', "You don't have permission to access this resource")
  );
  const own = (await asMember.post('/missions', { title: 'mine', goal: 'g', agentType: agent })).body.mission;
  expect((await asMember.del(`/missions/${own.id}`)).status).toBe(200);
  expect((await api.del(`/missions/${mission.id}`)).status).toBe(200);
}, 30_000);
