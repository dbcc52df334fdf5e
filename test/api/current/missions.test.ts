/**
 * Missions end to end on the real servers: a Temporal Schedule per mission (`mission-<id>`), next run times from
 * it, validation of cron and time zone (400 naming the field), a run fired with the Schedule's trigger() creating
 * a job linked to the mission (its goal listing the open tasks), a paused mission not firing, PATCH pausing and
 * resuming the Schedule, mission tasks with the v1 task state machine, and start-work creating a linked job.
 */
import { syncSchedule } from '../../../commands/missionSchedules';
import { Mission, ServiceEvent, Task } from '../../../models';
import { createTemporal, type TemporalDeps } from '../../../lib/temporal';
import { missionScheduleId } from '../../../workflows/ids';
import { currentAs } from '../../helpers/current';
import { buildAgent, buildOrg, buildWorkspace } from '../../helpers/factories';
import { useTestDatabase } from '../../helpers/mongo';
import { until } from '../../helpers/until';
import { useExecutionStack } from '../../helpers/worker';

useTestDatabase();
// The app's Temporal calls (a mission's Schedule: create, describe, update) get a loaded CI machine's time: at the
// default 3 s a busy run answered 503 here (the outage answer is tested in test/scripts/selfHealing.test.ts).
const stack = useExecutionStack('missions', { DEFAULT_MODEL: 'claude-test', DEPENDENCY_TIMEOUT_MS: '10000' });
/**
 * The test's own Temporal client, for its direct reads and triggers of Schedules: they wait as long as a loaded
 * server needs (the app's calls stop at DEPENDENCY_TIMEOUT_MS, which a busy CI machine once exceeded here).
 */
let temporal: TemporalDeps;
beforeAll(() => {
  temporal = createTemporal({ ...stack.t.config, dependencyTimeoutMs: 30_000 });
});
afterAll(async () => {
  await temporal?.connection.close();
});

async function setup() {
  const org = await buildOrg();
  const api = currentAs(stack.t, org.serviceToken);
  const agent = await buildAgent(stack.t, org, { name: 'Planner', system_prompt: 'Plan.' });
  const { id: workspace } = await buildWorkspace(stack.t, { org, name: 'Missions' });
  return { org, api, agent, workspace };
}

const schedules = () => temporal.client.schedule;

/** The workflow id of the run a trigger started (the Schedule's most recent action). */
async function lastRun(missionId: string, before: number): Promise<string> {
  const handle = schedules().getHandle(missionScheduleId(missionId));
  const read = async () => (await handle.describe()).info.recentActions;
  const recent = await until(read, (actions) => actions.length > before, 60_000, 100, 'an action of the schedule');
  return recent.at(-1)!.action.workflow.workflowId;
}

it('creates a mission with its Schedule; reads its next run times; refuses a bad cron or time zone', async () => {
  const { api, agent, workspace } = await setup();
  const res = await api.post('/missions', {
    title: 'Daily digest',
    goal: 'Summarize the news',
    agentType: agent,
    workspaceId: workspace,
    schedule: { type: 'cron', value: '0 9 * * 1-5', timezone: 'Europe/Paris' },
  });
  expect(res.status).toBe(201);
  const mission = res.body.mission;
  expect(mission).toMatchObject({
    title: 'Daily digest',
    agentType: agent,
    agentId: agent,
    status: 'active',
    schedule: { type: 'cron', value: '0 9 * * 1-5', timezone: 'Europe/Paris' },
  });
  expect(mission.nextRunTimes.length).toBeGreaterThan(0);
  // 09:00 in Paris is 07:00 or 08:00 UTC.
  expect(new Date(mission.nextRunTimes[0]).getUTCHours()).toBeGreaterThanOrEqual(7);
  expect(new Date(mission.nextRunTimes[0]).getUTCHours()).toBeLessThanOrEqual(8);
  const described = await schedules().getHandle(missionScheduleId(mission.id)).describe();
  expect(described.spec.timezone).toBe('Europe/Paris');
  expect(described.action).toMatchObject({ workflowType: 'missionRun' });
  const read = await api.get(`/missions/${mission.id}`);
  expect(read.body.mission.nextRunTimes).toEqual(mission.nextRunTimes);
  // Creating the Schedule again (a retried create) is a no-op, not an error.
  await syncSchedule(stack.t, (await Mission.findById(mission.id).lean())!);

  const bad = async (schedule: object, message: RegExp) => {
    const r = await api.post('/missions', { title: 'x', goal: 'g', agentType: agent, schedule });
    expect(r.status).toBe(400);
    expect(r.body.error.message).toMatch(message);
  };
  await bad({ type: 'cron', value: '61 * * * *' }, /^Invalid schedule\.value: /);
  await bad({ type: 'cron', value: '* * * * * *' }, /^Invalid schedule\.value: a cron expression has 5 fields/);
  await bad({ type: 'cron', value: '0 9 * * *', timezone: 'Mars/Olympus' }, /^Invalid schedule\.timezone: /);
  await bad({ type: 'cron' }, /^Missing required field: schedule\.value$/);
  await bad({ type: 'once', value: 'tomorrow' }, /^Invalid schedule\.value: /);
  await bad({ type: 'weekly', value: 'x' }, /^Invalid schedule\.type/);
  const noAgent = await api.post('/missions', { title: 'x', goal: 'g', agentType: 'agt_nope' });
  expect([noAgent.status, noAgent.body.error.message]).toEqual([
    400,
    'Invalid agentType: must be an agent id of the organization or a library agent: general, research-assistant, writing-editor, code-reviewer',
  ]);
  expect(await Mission.countDocuments({ title: 'x' })).toBe(0);
}, 30_000);

it('agentType names a kind of agent: a library slug (general, …) is installed on first use; uninstalled stays out', async () => {
  const { org, api } = await setup();
  const generalId = `agt_lib_general_${org.organizationId}`;
  const first = await api.post('/missions', { title: 'g1', goal: 'Tidy the backlog', agentType: 'general' });
  expect(first.status).toBe(201);
  expect(first.body.mission).toMatchObject({ agentType: 'general', agentId: generalId });
  const again = await api.post('/missions', { title: 'g2', goal: 'Tidy it again', agentType: 'general' });
  expect(again.body.mission.agentId).toBe(generalId);
  const agents = await api.get('/agents');
  expect(agents.body.agents.filter((a: { id: string }) => a.id === generalId)).toEqual([
    expect.objectContaining({ library_id: 'general', source: 'library', name: 'General Assistant' }),
  ]);
  expect(agents.body.library.find((e: { id: string }) => e.id === generalId).install_state).toBe('installed');

  // An owner's uninstall is not overridden by a mission naming it.
  expect((await api.patch(`/agents/${generalId}/install-state`, { state: 'uninstalled' })).status).toBe(200);
  const refused = await api.post('/missions', { title: 'g3', goal: 'x', agentType: 'general' });
  expect([refused.status, refused.body.error.message]).toEqual([
    400,
    'Invalid agentType: the library agent general was uninstalled in the organization (install it again with PATCH /api/agents/{id}/install-state)',
  ]);
}, 30_000);

it('a triggered run creates a job for the mission’s goal and open tasks, linked to the mission', async () => {
  const { org, api, agent, workspace } = await setup();
  const mission = (
    await api.post('/missions', {
      title: 'Research',
      goal: 'Research the market [[request_review]]',
      agentType: agent,
      workspaceId: workspace,
    })
  ).body.mission;
  expect(mission.schedule).toEqual({
    type: 'manual',
    value: null,
    timezone: 'UTC',
    overlap: 'allow_all',
    catchupWindow: null,
    pauseOnFailure: false,
    jitter: null,
  });
  expect(mission.nextRunTimes).toEqual([]);
  const open = (await api.post(`/missions/${mission.id}/tasks`, { title: 'Competitors' })).body.task;
  const done = (await api.post(`/missions/${mission.id}/tasks`, { title: 'Old question' })).body.task;
  await api.patch(`/missions/${mission.id}/tasks/${done.id}`, { status: 'in_progress' });
  await api.patch(`/missions/${mission.id}/tasks/${done.id}`, { status: 'completed' });

  await schedules().getHandle(missionScheduleId(mission.id)).trigger();
  const runId = await lastRun(mission.id, 0);
  // The run lasts as long as its job (docs/decisions.md "Schedule policies"): its job is read from the API.
  const jobs = (
    await until(
      () => api.get(`/jobs?mission_id=${mission.id}`),
      (r) => r.body.jobs?.length === 1
    )
  ).body.jobs;
  const job = jobs[0];
  expect(job.links).toMatchObject({ mission_id: mission.id, mission_run_id: runId });
  expect(job.goal).toContain('Competitors (pending)');
  expect(job.goal).not.toContain('Old question');
  expect(open.missionId).toBe(mission.id);
  const lineage = (await api.get(`/jobs/${job.id}/lineage`)).body;
  expect(lineage.mission_run).toEqual({ mission_id: mission.id, run_id: runId });
  // The job runs like any other: its first iteration asks for review.
  for (let i = 0; i < 200 && (await api.get(`/jobs/${job.id}`)).body.job.status !== 'awaiting_review'; i++)
    await new Promise((r) => setTimeout(r, 100));
  expect((await api.get(`/jobs/${job.id}`)).body.job.status).toBe('awaiting_review');
  const started = await ServiceEvent.find({ organizationId: org.organizationId, type: 'mission.run_started' }).lean();
  expect(started.map((e) => JSON.parse(e.data))).toEqual([{ mission_id: mission.id, run_id: runId }]);
  expect((await api.get(`/missions/${mission.id}`)).body.mission.lastRunAt).not.toBeNull();
  expect((await api.post(`/jobs/${job.id}/cancel`, {})).body.job.status).toBe('cancelled');
  // The run ends with its job.
  expect(await stack.t.temporal.client.workflow.getHandle(runId).result()).toEqual({
    jobId: job.id,
    status: 'cancelled',
  });
}, 60_000);

it('a paused mission does not fire; PATCH pauses and resumes its Schedule', async () => {
  const { org, api, agent } = await setup();
  const mission = (
    await api.post('/missions', {
      title: 'Hourly',
      goal: 'Check',
      agentType: agent,
      schedule: { type: 'cron', value: '0 * * * *' },
    })
  ).body.mission;
  const handle = schedules().getHandle(missionScheduleId(mission.id));
  const paused = await api.patch(`/missions/${mission.id}`, { status: 'paused' });
  expect(paused.status).toBe(200);
  expect(paused.body.mission).toMatchObject({ status: 'paused', nextRunTimes: [] });
  expect((await handle.describe()).state.paused).toBe(true);

  await handle.trigger();
  const runId = await lastRun(mission.id, 0);
  expect(await stack.t.temporal.client.workflow.getHandle(runId).result()).toEqual({ jobId: null });
  expect((await api.get(`/jobs?mission_id=${mission.id}`)).body.jobs).toEqual([]);

  const resumed = await api.patch(`/missions/${mission.id}`, {
    status: 'active',
    schedule: { type: 'cron', value: '30 6 * * *', timezone: 'America/New_York' },
    title: 'Daily',
  });
  expect(resumed.body.mission).toMatchObject({ status: 'active', title: 'Daily' });
  expect(resumed.body.mission.nextRunTimes.length).toBeGreaterThan(0);
  const described = await handle.describe();
  expect(described.state.paused).toBe(false);
  expect(described.spec.timezone).toBe('America/New_York');
  // The same PATCH again changes nothing and fails nothing (idempotent).
  const again = await api.patch(`/missions/${mission.id}`, { status: 'active' });
  expect(again.status).toBe(200);
  const updated = await ServiceEvent.find({ organizationId: org.organizationId, type: 'mission.updated' }).lean();
  expect(updated.length).toBe(3);
  const bad = await api.patch(`/missions/${mission.id}`, { schedule: { type: 'cron', value: 'nope' } });
  expect([bad.status, bad.body.error.message.startsWith('Invalid schedule.value')]).toEqual([400, true]);
  const list = await api.get('/missions?status=active');
  expect(list.body.missions.map((m: { id: string }) => m.id)).toEqual([mission.id]);
}, 60_000);

it('mission tasks follow the v1 task state machine; start-work starts a job linked to the mission and the task', async () => {
  const { api, agent, workspace } = await setup();
  const mission = (
    await api.post('/missions', { title: 'M', goal: 'Ship it', agentType: agent, workspaceId: workspace })
  ).body.mission;
  const created = await api.post(`/missions/${mission.id}/tasks`, { title: 'Write docs', priority: 'high' });
  expect(created.status).toBe(201);
  const task = created.body.task;
  expect(task).toMatchObject({ title: 'Write docs', status: 'pending', priority: 'high', missionId: mission.id });
  const wrong = await api.patch(`/missions/${mission.id}/tasks/${task.id}`, { status: 'completed' });
  expect([wrong.status, wrong.body.error.message]).toEqual([
    400,
    'Invalid status transition from pending to completed',
  ]);

  const work = await api.post(`/missions/${mission.id}/tasks/${task.id}/start-work`);
  expect(work.status).toBe(201);
  expect(work.body.jobId).toBe(work.body.job.id);
  expect(work.body.job.links).toMatchObject({ mission_id: mission.id, task_id: task.id });
  expect(work.body.job.goal).toBe('Ship it\n\nTask: Write docs');
  expect(await Task.findById(task.id).lean()).toMatchObject({ status: 'in_progress' });
  const moved = await api.patch(`/missions/${mission.id}/tasks/${task.id}`, { status: 'completed' });
  expect(moved.body.task.status).toBe('completed');

  // A task of another mission is not this mission's.
  const other = (await api.post('/missions', { title: 'O', goal: 'g', agentType: agent })).body.mission;
  const foreign = await api.patch(`/missions/${other.id}/tasks/${task.id}`, { title: 'x' });
  expect([foreign.status, foreign.body.error.message]).toEqual([404, 'Task not found']);
}, 30_000);
