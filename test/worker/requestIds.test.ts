/**
 * Request ids end to end (issue 27 point 3), over a real worker process's log lines: the `x-request-id` of the
 * request that started an execution (or a job) is on every line the worker logs for that work, from the workflow
 * (the Temporal runtime's lines, forwarded into pino) and from its activities; the execution record names it.
 */
import { randomBytes } from 'node:crypto';
import { Execution, type ExecutionDoc } from '../../models';
import { childTestEnv } from '../helpers/env';
import { bearer, buildOrg } from '../helpers/factories';
import { currentAs } from '../helpers/current';
import { useTestDatabase } from '../helpers/mongo';
import { spawnScript, type Spawned } from '../helpers/processes';
import { closeAfterAll } from '../helpers/teardown';
import { until } from '../helpers/until';
import { useExecutionStack } from '../helpers/worker';

const db = useTestDatabase();
// The executions run in a worker process (its log lines are read), none in the test process.
const stack = useExecutionStack('reqids', { DEFAULT_MODEL: 'claude-test' }, { worker: false });
let worker: Spawned;

beforeAll(async () => {
  worker = spawnScript(
    'worker/index.ts',
    childTestEnv({
      ...stack.env,
      MONGODB_URI: db.uri,
      WORKFLOW_BUNDLE: process.env.AAS_WORKFLOW_BUNDLE ?? '',
    })
  );
  await worker.waitFor(/worker started/, 90_000);
}, 120_000);
closeAfterAll(() => worker?.crash());

/** The worker's JSON log lines so far. */
function workerLines(): Array<Record<string, unknown>> {
  return worker
    .output()
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

/** @returns the worker's lines about one execution (by its id, or its workflow's). */
const linesOf = (executionId: string): Array<Record<string, unknown>> =>
  workerLines().filter((l) => l.executionId === executionId || l.workflowId === `execution-${executionId}`);

it('a failed execution: every worker line about it (workflow and activities) names the request id', async () => {
  const org = await buildOrg();
  const agent = await stack.t.request
    .post('/api/v1/agents')
    .set('Authorization', bearer(org.apiToken))
    .send({ name: 'A', systemPrompt: 'p' });
  const requestId = `req-${randomBytes(6).toString('hex')}`;
  const res = await stack.t.request
    .post(`/api/v1/agents/${agent.body.id}/execute`)
    .set('Authorization', bearer(org.apiToken))
    .set('x-request-id', requestId)
    .send({ message: 'bad [fail:400]' });
  expect(res.status).toBe(500);
  // The failed execution's answer names the request (its header), and so does the execution's record.
  expect(res.headers['x-request-id']).toBe(requestId);
  const exec = await Execution.findOne({ organizationId: org.organizationId }).lean<ExecutionDoc>();
  expect(exec).toMatchObject({ status: 'failed', requestId });
  const read = await stack.t.request.get(`/api/v1/executions/${exec!._id}`).set('Authorization', bearer(org.apiToken));
  expect(read.body.execution).toMatchObject({ status: 'failed', requestId });

  // The workflow's own line (forwarded from the Temporal runtime) and the activities' lines.
  const lines = await until(
    async () => linesOf(exec!._id),
    (ls) => ls.some((l) => l.msg === 'execution failed') && ls.some((l) => l.msg === 'execution finished')
  );
  expect(lines.some((l) => l.component === 'temporal')).toBe(true); // a workflow line
  expect(lines.some((l) => l.component === 'executions')).toBe(true); // an activity line
  for (const line of lines) expect({ msg: line.msg, reqId: line.reqId }).toEqual({ msg: line.msg, reqId: requestId });
}, 60_000);

it('a job: its iterations’ executions and their worker lines carry the id of the request that created it', async () => {
  const org = await buildOrg();
  const api = currentAs(stack.t, org.serviceToken);
  const agent = await api.post('/agents', { name: 'Worker', system_prompt: 'Do the work.' });
  const ws = await api.post('/workspaces', { name: 'Jobs' });
  const requestId = `job-req-${randomBytes(6).toString('hex')}`;
  const created = await stack.t.request
    .post('/api/jobs')
    .set('Authorization', bearer(org.serviceToken))
    .set('x-request-id', requestId)
    .send({ agent_id: agent.body.agent.id, workspace_id: ws.body.workspace.id, goal: 'write the plan' });
  expect(created.status).toBe(201);
  const exec = await until(
    () => Execution.findOne({ organizationId: org.organizationId, jobId: created.body.job.id }).lean<ExecutionDoc>(),
    (e) => e?.status === 'completed'
  );
  expect(exec!.requestId).toBe(requestId);
  const lines = await until(
    async () => linesOf(exec!._id),
    (ls) => ls.some((l) => l.msg === 'execution finished')
  );
  for (const line of lines) expect({ msg: line.msg, reqId: line.reqId }).toEqual({ msg: line.msg, reqId: requestId });
  const jobLines = workerLines().filter((l) => l.jobId === created.body.job.id);
  expect(jobLines.length).toBeGreaterThan(0);
  for (const line of jobLines)
    expect({ msg: line.msg, reqId: line.reqId }).toEqual({ msg: line.msg, reqId: requestId });
}, 60_000);
