/**
 * Jobs end to end: real api over HTTP, real Temporal dev server and worker, the embedded database, and the
 * official Anthropic SDK against the fake Anthropic server (which echoes the iteration's input, so the protocol
 * markers in a goal or in feedback come back in the reply). Covers the review loop, block / resume, cancel in each
 * state (queued, running, awaiting_review, blocked), 409 with the current state on wrong-state actions, the
 * workflow and the record agreeing after every action, lineage and the execution tree after iterations, the
 * transcript pages, the job stream (gap-free, ends at the terminal status) and the service events.
 */
import { Execution, Job, ServiceEvent } from '../../../models';
import { jobWorkflowId } from '../../../workflows/ids';
import { jobStatusQuery } from '../../../workflows/definitions';
import { bearer } from '../../helpers/factories';
import { jobSetup, newJob, waitForStatus, type JobSetup } from '../../helpers/jobs';
import { useTestDatabase } from '../../helpers/mongo';
import { openSse } from '../../helpers/sse';
import { startTestWorker, useExecutionStack } from '../../helpers/worker';

useTestDatabase();
const stack = useExecutionStack('jobs', { DEFAULT_MODEL: 'claude-test' });

type Setup = JobSetup;
const setup = (): Promise<Setup> => jobSetup(stack.t);

/** The workflow's own view, which the record must agree with. */
async function workflowStatus(id: string): Promise<string> {
  return (await stack.t.temporal.client.workflow.getHandle(jobWorkflowId(id)).query(jobStatusQuery)).status;
}

async function agreed(s: Setup, id: string): Promise<string> {
  const record = (await s.api.get(`/jobs/${id}`)).body.job.status;
  expect(await workflowStatus(id)).toBe(record);
  return record;
}

it('the review loop: run → awaiting_review → iterate → awaiting_review → approve → completed', async () => {
  const s = await setup();
  const id = await newJob(s, 'Write the report [[request_review]]', { title: 'Report' });
  const stream = await openSse(`${stack.base}/api/jobs/${id}/events`, { headers: { authorization: bearer(s.token) } });
  let job = await waitForStatus(s, id, 'awaiting_review');
  expect(await agreed(s, id)).toBe('awaiting_review');
  expect(job.review.state).toBe('pending');
  expect(job.artifacts[0]).toMatchObject({ id: 'reply-1', content: 'Echo: Write the report [[request_review]]' });
  // The job's chat wants a human, and lists the job among its work.
  const chat = await s.api.get(`/chats/${job.links.chat_id}/messages`);
  expect(chat.body.chat.status).toBe('needs_attention');
  expect(chat.body.work.jobs).toEqual([expect.objectContaining({ id, status: 'awaiting_review' })]);
  expect(chat.body.work.executions).toHaveLength(1);

  const iterated = await s.api.post(`/jobs/${id}/iterate`, { feedback: 'Shorter please [[request_review]]' });
  expect(iterated.status).toBe(200);
  expect(iterated.body.job).toMatchObject({ status: 'running', review: { state: 'changes_requested' } });
  expect(await workflowStatus(id)).toBe('running');
  job = await waitForStatus(s, id, 'awaiting_review');
  expect(await agreed(s, id)).toBe('awaiting_review');
  expect(job.iterations.map((i: { reason: string }) => i.reason)).toEqual(['goal', 'feedback']);
  expect(job.artifacts[1].content).toBe('Echo: Reviewer feedback:\nShorter please [[request_review]]');

  const approved = await s.api.post(`/jobs/${id}/approve`, {});
  expect(approved.status).toBe(200);
  expect(approved.body.job).toMatchObject({ status: 'completed', review: { state: 'approved' } });
  expect(await stack.t.temporal.client.workflow.getHandle(jobWorkflowId(id)).result()).toMatchObject({
    status: 'completed',
  });

  // The second iteration saw the first in its history (same session), and was told the protocol.
  const second = stack.fake.requests.find((r) => JSON.stringify(r.messages).includes('Shorter please'))!;
  expect(second.messages!.length).toBe(3);
  expect(JSON.stringify(second.system)).toContain('[[request_review]]');

  // The job stream: every transition in order, ids without gaps, ended by the terminal status.
  await stream.ended;
  expect(stream.raw).toMatch(/^: connected\nretry: 2000\n\n/); // the connection comment first (SPEC)
  expect(stream.events.map((e) => Number(e.id))).toEqual(stream.events.map((_, i) => i + 1));
  const statuses = stream.events.filter((e) => e.event === 'job.status').map((e) => JSON.parse(e.data).status);
  expect(statuses).toEqual(['queued', 'running', 'awaiting_review', 'running', 'awaiting_review', 'completed']);
  const outputs = stream.events.filter((e) => e.event === 'transcript.output').map((e) => JSON.parse(e.data).text);
  expect(outputs).toEqual([job.artifacts[0].content, job.artifacts[1].content]);

  // Lineage and the execution tree: two iterations, the second under the first.
  const lineage = await s.api.get(`/jobs/${id}/lineage`);
  expect(lineage.status).toBe(200);
  const [first, next] = lineage.body.iterations;
  expect(lineage.body.iterations).toHaveLength(2);
  expect(next.parent_execution_id).toBe(first.execution_id);
  const execs = await Execution.find({ jobId: id }).sort({ turn: 1 }).lean();
  // An optional field without a value is not stored (models/Execution.ts): read as null.
  expect(execs.map((e) => [e._id, e.status, e.parentExecutionId ?? null, e.rootExecutionId, e.source])).toEqual([
    [first.execution_id, 'completed', null, first.execution_id, 'job'],
    [next.execution_id, 'completed', first.execution_id, first.execution_id, 'job'],
  ]);

  // Transcript events, one page at a time, covering both iterations' streams.
  const all: { iteration: number; event: string }[] = [];
  let cursor: string | null = null;
  do {
    const page: { body: { events: { iteration: number; event: string }[]; next_cursor: string | null } } =
      await s.api.get(`/jobs/${id}/transcript-events?limit=3${cursor ? `&cursor=${cursor}` : ''}`);
    all.push(...page.body.events);
    cursor = page.body.next_cursor;
  } while (cursor);
  expect(all.filter((e) => e.event === 'result').map((e) => e.iteration)).toEqual([1, 2]);
  expect(all.filter((e) => e.event === 'meta')).toHaveLength(2);

  // Service events: one per change, keyed, none twice.
  const types = (await ServiceEvent.find({ organizationId: s.organizationId }).lean())
    .filter((e) => e.type.startsWith('job.'))
    .map((e) => e.type)
    .sort();
  expect(types).toEqual(
    [
      'job.created',
      'job.status_changed',
      'job.status_changed',
      'job.review_requested',
      'job.status_changed',
      'job.status_changed',
      'job.review_requested',
      'job.status_changed',
      'job.done',
    ].sort()
  );
}, 60_000);

it('block / resume: the agent asks for input; the answer runs the next iteration', async () => {
  const s = await setup();
  const id = await newJob(s, 'Plan the trip [[request_input: Which city?]]');
  const job = await waitForStatus(s, id, 'blocked');
  expect(job.question).toBe('Which city?');
  expect(await agreed(s, id)).toBe('blocked');
  const resumed = await s.api.post(`/jobs/${id}/resume`, { input: 'Paris' });
  expect(resumed.status).toBe(200);
  expect(resumed.body.job.status).toBe('running');
  const done = await waitForStatus(s, id, 'completed');
  expect(done.iterations.map((i: { reason: string; input: string }) => [i.reason, i.input])).toEqual([
    ['goal', ''],
    ['input', 'Paris'],
  ]);
  expect(done.question).toBeNull();
  expect(await Job.findById(id).lean()).toMatchObject({ status: 'completed' });
}, 30_000);

it('a failed iteration fails the job (and every action is then 409)', async () => {
  const s = await setup();
  const id = await newJob(s, 'Doomed [fail:400]');
  const job = await waitForStatus(s, id, 'failed');
  expect(await agreed(s, id)).toBe('failed');
  expect((await s.api.get(`/jobs/${id}`)).body.job.error).toEqual({
    message: 'The job’s iteration failed',
    code: 'iteration_failed',
  });
  expect(job.iterations.map((i) => i.reason)).toEqual(['goal']);
  const res = await s.api.post(`/jobs/${id}/cancel`, {});
  expect([res.status, res.body.error.current_state]).toEqual([409, 'failed']);
}, 30_000);

it('approve with a next step runs another iteration', async () => {
  const s = await setup();
  const id = await newJob(s, 'Step one [[request_review]]');
  await waitForStatus(s, id, 'awaiting_review');
  const res = await s.api.post(`/jobs/${id}/approve`, { next_step: 'Step two' });
  expect(res.body.job).toMatchObject({ status: 'running', review: { state: 'approved' } });
  const done = await waitForStatus(s, id, 'completed');
  expect(done.iterations.map((i: { reason: string }) => i.reason)).toEqual(['goal', 'next_step']);
}, 30_000);

it('409 with the current state for every action that does not fit, never a 5xx', async () => {
  const s = await setup();
  const id = await newJob(s, 'Wait [[request_input: What now?]]');
  await waitForStatus(s, id, 'blocked');
  for (const [action, body] of [
    ['approve', {}],
    ['iterate', { feedback: 'x' }],
  ] as const) {
    const res = await s.api.post(`/jobs/${id}/${action}`, body);
    expect([res.status, res.body.error]).toEqual([
      409,
      { code: 'conflict', message: `Cannot ${action} a job that is blocked`, current_state: 'blocked' },
    ]);
  }
  expect(await agreed(s, id)).toBe('blocked');
  const review = await newJob(s, 'Look [[request_review]]');
  await waitForStatus(s, review, 'awaiting_review');
  const wrong = await s.api.post(`/jobs/${review}/resume`, { input: 'x' });
  expect([wrong.status, wrong.body.error.current_state]).toEqual([409, 'awaiting_review']);
  // Finished jobs: every action is 409 with the final state.
  const cancelled = await s.api.post(`/jobs/${id}/cancel`, {});
  expect(cancelled.body.job.status).toBe('cancelled');
  for (const action of ['approve', 'iterate', 'resume', 'cancel']) {
    const res = await s.api.post(
      `/jobs/${id}/${action}`,
      action === 'iterate' ? { feedback: 'x' } : action === 'resume' ? { input: 'x' } : {}
    );
    expect([res.status, res.body.error.code, res.body.error.current_state]).toEqual([409, 'conflict', 'cancelled']);
  }
  // Two actions at once: one wins, the other is 409 (never both applied).
  const race = await newJob(s, 'Race [[request_review]]');
  await waitForStatus(s, race, 'awaiting_review');
  const [a, b] = await Promise.all([s.api.post(`/jobs/${race}/approve`, {}), s.api.post(`/jobs/${race}/cancel`, {})]);
  expect([a.status, b.status].sort()).toEqual([200, 409]);
  const final = (await s.api.get(`/jobs/${race}`)).body.job.status;
  expect(['completed', 'cancelled']).toContain(final);
  expect(await Job.findById(race).lean()).toMatchObject({ status: final });
}, 60_000);

it('cancel while running aborts the iteration before it answers', async () => {
  const s = await setup();
  const id = await newJob(s, `[slow:100]${'long reply '.repeat(40)}`);
  await waitForStatus(s, id, 'running');
  // Wait until the model is streaming.
  const first = (await s.api.get(`/jobs/${id}`)).body.job.iterations[0].execution_id;
  for (let i = 0; i < 100 && (await Execution.findById(first).lean())?.status !== 'running'; i++)
    await new Promise((r) => setTimeout(r, 50));
  const abortedBefore = stack.fake.aborted;
  const res = await s.api.post(`/jobs/${id}/cancel`, {});
  expect(res.status).toBe(200);
  expect(res.body.job.status).toBe('cancelled');
  // By the time the action answers, the iteration was stopped and the model request aborted.
  expect(await Execution.findById(first).lean()).toMatchObject({ status: 'cancelled' });
  expect(res.body.job.iterations.map((i: { status: string }) => i.status)).toEqual(['cancelled']);
  expect(stack.fake.aborted).toBeGreaterThan(abortedBefore);
  expect(await workflowStatus(id)).toBe('cancelled');
}, 30_000);

it('cancel while awaiting review and while blocked', async () => {
  const s = await setup();
  for (const [goal, state] of [
    ['A [[request_review]]', 'awaiting_review'],
    ['B [[request_input: ?]]', 'blocked'],
  ]) {
    const id = await newJob(s, goal);
    await waitForStatus(s, id, state);
    const res = await s.api.post(`/jobs/${id}/cancel`, {});
    expect([res.status, res.body.job.status]).toEqual([200, 'cancelled']);
    expect(await workflowStatus(id)).toBe('cancelled');
  }
}, 30_000);

it('cancel while queued: no worker has picked the job up yet; no iteration runs', async () => {
  const s = await setup();
  await stack.worker.stop();
  let restarted = false;
  try {
    const id = await newJob(s, 'Never runs [[request_review]]');
    expect((await s.api.get(`/jobs/${id}`)).body.job.status).toBe('queued');
    const cancelling = s.api.post(`/jobs/${id}/cancel`, {}).then((r) => r);
    await new Promise((r) => setTimeout(r, 500));
    stack.worker = await startTestWorker(stack.t.config);
    restarted = true;
    const res = await cancelling;
    expect([res.status, res.body.job.status]).toEqual([200, 'cancelled']);
    expect(res.body.job.iterations).toEqual([]);
    expect(await Execution.countDocuments({ jobId: id })).toBe(0);
  } finally {
    if (!restarted) stack.worker = await startTestWorker(stack.t.config);
  }
}, 60_000);

it('validation: a missing goal, an unknown agent, an unknown parent', async () => {
  const s = await setup();
  const noGoal = await s.api.post('/jobs', { agent_id: s.agentId, workspace_id: s.workspaceId });
  expect([noGoal.status, noGoal.body.error.message]).toEqual([400, 'Missing required field: goal']);
  const noAgent = await s.api.post('/jobs', { agent_id: 'agt_nope', workspace_id: s.workspaceId, goal: 'g' });
  expect([noAgent.status, noAgent.body.error.message]).toEqual([400, 'Invalid agent_id: agent not found']);
  const noParent = await s.api.post('/jobs', {
    agent_id: s.agentId,
    workspace_id: s.workspaceId,
    goal: 'g',
    parent_job_id: 'job_nope',
  });
  expect([noParent.status, noParent.body.error.message]).toEqual([400, 'Invalid parent_job_id: job not found']);
  const badStatus = await s.api.get('/jobs?status=done');
  expect(badStatus.status).toBe(400);
});

it('lists jobs with filters, and a child job shows in its parent’s lineage', async () => {
  const s = await setup();
  const parent = await newJob(s, 'Parent');
  const child = await newJob(s, 'Child', { parent_job_id: parent });
  await waitForStatus(s, child, 'completed');
  const lineage = await s.api.get(`/jobs/${parent}/lineage`);
  expect(lineage.body.children.map((c: { id: string }) => c.id)).toEqual([child]);
  expect((await s.api.get(`/jobs/${child}/lineage`)).body.parent.id).toBe(parent);
  const completed = await s.api.get('/jobs?status=completed&limit=1');
  expect(completed.body.jobs).toHaveLength(1);
  expect(completed.body.next_cursor).not.toBeNull();
  const byAgent = await s.api.get(`/jobs?agent_id=${s.agentId}`);
  expect(byAgent.body.jobs.map((j: { id: string }) => j.id)).toEqual([child, parent]);
  const chat = (await s.api.get(`/jobs/${child}`)).body.job.links.chat_id;
  expect((await s.api.get(`/jobs?chat_id=${chat}`)).body.jobs.map((j: { id: string }) => j.id)).toEqual([child]);
}, 30_000);

it('the job’s chat shows a job waiting for a human: chat.status needs_attention with what it waits for', async () => {
  const s = await setup();
  const review = await newJob(s, 'Draft it [[request_review]]');
  const blocked = await newJob(s, 'Plan it [[request_input: which region?]]');
  const chatOf = async (id: string): Promise<string> => (await s.api.get(`/jobs/${id}`)).body.job.links.chat_id;
  await waitForStatus(s, review, 'awaiting_review');
  await waitForStatus(s, blocked, 'blocked');
  const expectations: Array<[string, object]> = [
    [review, { state: 'awaiting_review', question: null }],
    [blocked, { state: 'blocked', question: 'which region?' }],
  ];
  for (const [id, waiting] of expectations) {
    const chatId = await chatOf(id);
    const stream = await openSse(`${stack.base}/api/chats/${chatId}/events?lastEventId=0`, {
      headers: { authorization: bearer(s.token) },
    });
    const last = (): { status?: string; review?: object } =>
      JSON.parse(stream.events.filter((e) => e.event === 'chat.status').at(-1)?.data ?? '{}');
    while (last().status !== 'needs_attention') await stream.waitFor(stream.events.length + 1, 10_000);
    stream.close();
    expect(last().review).toEqual({ job_id: id, ...waiting });
    const listed = await s.api.get(`/chats?status=needs_attention`);
    expect(listed.body.chats.map((c: { id: string }) => c.id)).toContain(chatId);
  }
});
