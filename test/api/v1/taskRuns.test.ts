/**
 * Task runs (issue 36 point 4: POST /api/v1/tasks/{id}/run) over real HTTP with the real worker: the task's agent
 * executes its title and description, the execution records the task and is listed by agent and by task, and the
 * task moves pending → in_progress → completed (or back to pending when the run is cancelled); what cannot run is
 * 409, another organization's task 404.
 */
import { buildMember, buildOrg } from '../../helpers/factories';
import { useTestDatabase } from '../../helpers/mongo';
import { until } from '../../helpers/until';
import { v1As, v1Error } from '../../helpers/v1';
import { useExecutionStack } from '../../helpers/worker';

useTestDatabase();
const stack = useExecutionStack('task-runs', { DEFAULT_MODEL: 'claude-test' });

async function setup(): Promise<{ as: ReturnType<typeof v1As>; agentId: string; organizationId: string }> {
  const org = await buildOrg();
  const as = v1As(stack.t, org.apiToken);
  const agent = await as.post('/agents', { name: 'Runner', systemPrompt: 'Do the task.' });
  expect(agent.status).toBeLessThan(300);
  return { as, agentId: agent.body.id, organizationId: org.organizationId };
}

async function newTask(as: ReturnType<typeof v1As>, body: object): Promise<string> {
  const res = await as.post('/tasks', body);
  expect(res.status).toBe(200);
  return res.body.task.id;
}

const taskOf = async (as: ReturnType<typeof v1As>, id: string) => (await as.get(`/tasks/${id}`)).body.task;

it('runs a task with its agent: the execution names the task, is listed by agent and by task; the task ends completed', async () => {
  const { as, agentId } = await setup();
  const id = await newTask(as, { title: 'Summarize', description: 'the quarterly report', assignTo: agentId });
  const run = await as.post(`/tasks/${id}/run`);
  expect(run.status).toBe(200);
  expect(run.body).toMatchObject({ success: true, executionId: expect.stringMatching(/^exec-/) });
  expect(run.body.task).toMatchObject({ id, status: 'in_progress' });
  const executionId = run.body.executionId as string;

  const done = await until(
    () => taskOf(as, id),
    (t) => t.status !== 'in_progress',
    60_000,
    200,
    'the task to leave in_progress'
  );
  expect(done.status).toBe('completed');
  expect(done.completedAt).toEqual(expect.any(String));
  const exec = (await as.get(`/executions/${executionId}`)).body.execution;
  expect(exec).toMatchObject({
    status: 'completed',
    agentId,
    taskId: id,
    input: { message: 'Summarize\n\nthe quarterly report' },
    result: 'Echo: Summarize\n\nthe quarterly report',
  });
  const byAgent = (await as.get(`/executions?agentId=${agentId}`)).body.executions.map((e: { id: string }) => e.id);
  expect(byAgent).toContain(executionId);
  const byTask = (await as.get(`/executions?taskId=${id}`)).body.executions.map((e: { id: string }) => e.id);
  expect(byTask).toEqual([executionId]);
  // A completed task is not run again.
  expect((await as.post(`/tasks/${id}/run`)).body).toEqual(
    v1Error(409, 'Conflict', 'Only a pending task can be run (this one is completed)')
  );
});

it('a cancelled run puts the task back to pending, and it can run again; two runs at once start one', async () => {
  const { as, agentId } = await setup();
  const id = await newTask(as, { title: '[chunks:60][slow:100]', assignTo: agentId });
  const [a, b] = await Promise.all([as.post(`/tasks/${id}/run`), as.post(`/tasks/${id}/run`)]);
  expect([a.status, b.status].sort()).toEqual([200, 409]);
  const executionId = (a.status === 200 ? a : b).body.executionId as string;
  expect((await taskOf(as, id)).status).toBe('in_progress');
  expect((await as.post(`/executions/${executionId}/cancel`)).status).toBe(200);
  const back = await until(
    () => taskOf(as, id),
    (t) => t.status !== 'in_progress',
    60_000,
    200,
    'the task to leave in_progress'
  );
  expect(back.status).toBe('pending');
  expect(back).not.toHaveProperty('completedAt');
  const again = await as.post(`/tasks/${id}/run`);
  expect(again.status).toBe(200);
  expect(again.body.executionId).not.toBe(executionId);
  await as.post(`/executions/${again.body.executionId}/cancel`);
  const runs = (await as.get(`/executions?taskId=${id}`)).body.executions.map((e: { id: string }) => e.id);
  expect(runs.sort()).toEqual([executionId, again.body.executionId].sort());
});

it('409 for a task not assigned to an agent; 404 for another organization’s task', async () => {
  const { as, organizationId } = await setup();
  const unassigned = await newTask(as, { title: 'Nobody' });
  expect((await as.post(`/tasks/${unassigned}/run`)).body).toEqual(
    v1Error(409, 'Conflict', 'Only a task assigned to an agent can be run')
  );
  const member = await buildMember(organizationId);
  const toUser = await newTask(as, { title: 'A person', assignTo: member.userId });
  expect((await as.post(`/tasks/${toUser}/run`)).status).toBe(409);
  expect((await taskOf(as, toUser)).status).toBe('pending');

  const other = await setup();
  const foreign = await newTask(other.as, { title: 'Theirs', assignTo: other.agentId });
  expect((await as.post(`/tasks/${foreign}/run`)).body).toEqual(v1Error(404, 'Not Found', 'Task not found'));
  expect((await taskOf(other.as, foreign)).status).toBe('pending');
  const doc = (await stack.t.request.get('/api/openapi.json')).body;
  expect(Object.keys(doc.paths['/api/v1/tasks/{id}/run'].post.responses)).toEqual(
    expect.arrayContaining(['200', '404', '409'])
  );
});
