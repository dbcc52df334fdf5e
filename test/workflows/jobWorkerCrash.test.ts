/**
 * Durability of a job: the worker process killed (SIGKILL) in the middle of a job's iteration. A new worker picks
 * the job up where it was: the iteration's reply is continued (not restarted), the job reaches awaiting_review
 * once, every transition is on the job stream and in the service events exactly once, and the job takes its next
 * action as usual.
 */
import { Execution, Job, ServiceEvent } from '../../models';
import { readEvents } from '../../commands/eventLog';
import { jobStreamId } from '../../models';
import { currentAs } from '../helpers/current';
import { childTestEnv } from '../helpers/env';
import { buildAgent, buildOrg, buildWorkspace } from '../helpers/factories';
import { useTestDatabase } from '../helpers/mongo';
import { spawnScript, type Spawned } from '../helpers/processes';
import { closeAfterAll } from '../helpers/teardown';
import { until } from '../helpers/until';
import { useExecutionStack } from '../helpers/worker';

const db = useTestDatabase();
// The job runs in worker processes, none in the test process.
const stack = useExecutionStack('job-crash', { DEFAULT_MODEL: 'claude-test' }, { worker: false });
const workers: Spawned[] = [];
closeAfterAll(() => workers.forEach((w) => w.crash()));

it('a worker killed mid-iteration: the job continues where it was, nothing lost or repeated', async () => {
  const startWorker = async (): Promise<Spawned> => {
    const w = spawnScript('worker/index.ts', childTestEnv({ ...stack.env, MONGODB_URI: db.uri }));
    workers.push(w);
    await w.waitFor(/worker started/, 90_000);
    return w;
  };
  const first = await startWorker();
  const org = await buildOrg();
  const api = currentAs(stack.t, org.serviceToken);
  const agent = await buildAgent(stack.t, org, { name: 'W', system_prompt: 'p' });
  const { id: ws } = await buildWorkspace(stack.t, { org, name: 'W' });
  const goal = `[slow:100] ${'a long piece of work '.repeat(8)}[[request_review]]`;
  const created = await api.post('/jobs', { agent_id: agent, workspace_id: ws, goal });
  expect(created.status).toBe(201);
  const id: string = created.body.job.id;

  // Well into the iteration's reply: its execution has streamed some text.
  const job = await until(
    () => Job.findById(id).lean(),
    (j) => (j?.iterations.length ?? 0) > 0
  );
  const executionId = job!.iterations[0].executionId;
  await until(
    () => readEvents(executionId),
    (events) => events.length > 5
  );
  first.crash();
  await first.exited();
  await startWorker();

  const reviewed = await until(
    () => api.get(`/jobs/${id}`),
    (r) => r.body.job?.status === 'awaiting_review'
  );
  const expected = `Echo: ${goal}`;
  expect(reviewed.body.job.iterations).toHaveLength(1);
  expect(reviewed.body.job.artifacts.map((a: { content: string }) => a.content)).toEqual([expected]);
  expect(await Execution.findById(executionId).lean()).toMatchObject({ status: 'completed', result: expected });
  // The retried reply continued after the delivered text (a prefill), rather than starting again.
  expect(stack.fake.requests.some((r) => r.messages?.at(-1)?.role === 'assistant')).toBe(true);

  // The job stream: each transition once, ids without gaps.
  const events = await readEvents(jobStreamId(id));
  expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
  expect(events.filter((e) => e.event === 'job.status').map((e) => e.data.status)).toEqual([
    'queued',
    'running',
    'awaiting_review',
  ]);
  expect(events.filter((e) => e.event === 'transcript.output')).toHaveLength(1);

  // The job goes on taking actions after the restart.
  const approved = await api.post(`/jobs/${id}/approve`, {});
  expect(approved.body.job.status).toBe('completed');
  const types = (await ServiceEvent.find({ organizationId: org.organizationId }).lean())
    .map((e) => e.type)
    .filter((type) => type.startsWith('job.'))
    .sort();
  expect(types).toEqual(
    [
      'job.created',
      'job.status_changed',
      'job.status_changed',
      'job.review_requested',
      'job.status_changed',
      'job.done',
    ].sort()
  );
}, 180_000);
