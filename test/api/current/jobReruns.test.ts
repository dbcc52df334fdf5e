/**
 * Job reruns (issue 40 point 5, docs/decisions.md "Job reruns") through real HTTP, Temporal, the fake Anthropic API
 * and a real MCP server on loopback that counts its calls. The job's iterations each call `calc__add` (counted) and
 * read a workspace file holding the review marker, so each asks for review. A rerun from the second iteration's
 * first model turn takes the first iteration over (its tool is not called again) and reaches awaiting_review; from
 * its last model turn, no tool is called and the model is asked once; from the first iteration with a changed goal, a
 * new first turn; bad steps are 400 and write nothing; a worker killed during the rerun job loses and repeats
 * nothing.
 */
import { randomInt } from 'node:crypto';
import { readEvents } from '../../../commands/eventLog';
import { Execution, Job, jobStreamId } from '../../../models';
import { currentAs } from '../../helpers/current';
import { buildOrg } from '../../helpers/factories';
import { waitForStatus, type JobSetup } from '../../helpers/jobs';
import { useStackWithMcpServer } from '../../helpers/mcpServer';
import { useTestDatabase } from '../../helpers/mongo';
import { until } from '../../helpers/until';
import { v1As } from '../../helpers/v1';
import { useTestWorker, useWorkerProcesses } from '../../helpers/worker';

const db = useTestDatabase();
// No worker in the test process at the file's level: the crash tests start worker processes on the same queue.
const { stack, mcp } = useStackWithMcpServer('job-reruns');

const JOB_MS = 90_000;
const callsOf = (a: number): number => mcp.calls.filter((c) => c.args.a === a).length;
/** An iteration's input: a counted tool call, and the review marker read from the workspace (in the tool results). */
const work = (a: number, extra = ''): string =>
  `[tool:calc__add {"a":${a},"b":1}] [tool:read_file {"path":"review.txt"}]${extra}`;
const reply = (a: number): string => `Using tools.Tool results: sum=${a + 1} | [[request_review]]`;

/** An organization with an agent that has the test MCP server (`calc`), and a workspace holding review.txt. */
async function setUp(): Promise<JobSetup> {
  const org = await buildOrg();
  const v1 = v1As(stack.t, org.apiToken);
  const server = await v1.post('/mcp-servers', { name: 'calc', url: mcp.url, headers: { Authorization: 'Bearer x' } });
  expect(server.status).toBe(200);
  const agent = await v1.post('/agents', {
    name: 'Calc',
    systemPrompt: 'Use your tools.',
    mcpServerIds: [server.body.mcpServer.id],
  });
  expect(agent.status).toBe(200);
  const api = currentAs(stack.t, org.serviceToken);
  const ws = await api.post('/workspaces', { name: 'Jobs' });
  const upload = await stack.t.request
    .put(`/api/workspaces/${ws.body.workspace.id}/files/content?path=review.txt`)
    .set('Authorization', `Bearer ${org.serviceToken}`)
    .send('[[request_review]]');
  expect(upload.status).toBe(201);
  return {
    token: org.serviceToken,
    organizationId: org.organizationId,
    api,
    agentId: agent.body.id,
    workspaceId: ws.body.workspace.id,
  };
}

/**
 * A job of two iterations, each calling `calc__add` once (a, then b) and asking for review; it waits for the
 * second review.
 */
async function twoIterations(s: JobSetup, a: number, b: number, feedbackExtra = ''): Promise<string> {
  const created = await s.api.post('/jobs', { agent_id: s.agentId, workspace_id: s.workspaceId, goal: work(a) });
  expect(created.status).toBe(201);
  const id: string = created.body.job.id;
  await waitForStatus(s, id, 'awaiting_review', JOB_MS);
  const iterated = await s.api.post(`/jobs/${id}/iterate`, { feedback: work(b, feedbackExtra) });
  expect(iterated.status).toBe(200);
  await until(
    async () => (await s.api.get(`/jobs/${id}`)).body.job,
    (j) => j.status === 'awaiting_review' && j.iterations.length === 2,
    JOB_MS
  );
  expect([callsOf(a), callsOf(b)]).toEqual([1, 1]);
  return id;
}

const FOUR_STEPS = [
  { step: 1, kind: 'model_turn', round: 1 },
  { step: 2, kind: 'tool_call', round: 1, tool_use_id: expect.any(String), name: 'calc__add' },
  { step: 3, kind: 'tool_call', round: 1, tool_use_id: expect.any(String), name: 'read_file' },
  { step: 4, kind: 'model_turn', round: 2 },
];

describe('with a worker in the test process', () => {
  useTestWorker(() => stack.t, { describe: true });

  it('steps; a rerun from the 2nd iteration’s model turn takes the 1st over and reaches review; the original is untouched', async () => {
    const s = await setUp();
    const a = randomInt(1_000_000);
    const b = a + 1_000_000;
    const id = await twoIterations(s, a, b);
    const original = (await s.api.get(`/jobs/${id}`)).body.job;

    const steps = await s.api.get(`/jobs/${id}/steps`);
    expect(steps.status).toBe(200);
    expect(steps.body).toEqual({
      job_id: id,
      iterations: [1, 2].map((n) => ({
        n,
        execution_id: original.iterations[n - 1].execution_id,
        reason: n === 1 ? 'goal' : 'feedback',
        status: 'completed',
        steps: FOUR_STEPS,
        unavailable: null,
      })),
    });

    const asked = stack.fake.requests.length;
    const rerun = await s.api.post(`/jobs/${id}/rerun`, { iteration: 2, step: 1 });
    expect(rerun.status).toBe(201);
    const rerunId: string = rerun.body.job.id;
    expect(rerunId).not.toBe(id);
    expect(rerun.body.job).toMatchObject({
      status: 'queued',
      goal: original.goal,
      rerun_of: { job_id: id, iteration: 2, step: 1, execution_id: original.iterations[1].execution_id },
      iterations: [{ n: 1, execution_id: original.iterations[0].execution_id, status: 'completed' }],
    });
    expect(rerun.body.job.links.chat_id).not.toBe(original.links.chat_id);

    const done = await waitForStatus(s, rerunId, 'awaiting_review', JOB_MS);
    // The first iteration was taken over: its tool not called again; the second ran again from its first turn.
    expect([callsOf(a), callsOf(b)]).toEqual([1, 2]);
    expect(done.iterations.map((i) => [i.reason, i.execution_id === original.iterations[0].execution_id])).toEqual([
      ['goal', true],
      ['feedback', false],
    ]);
    expect(done.artifacts.map((x) => x.content)).toEqual([reply(a), reply(b)]);
    // Two model calls (the turn and the one after the tools), the first with the 1st iteration as history.
    const sent = stack.fake.requests.slice(asked);
    expect(sent).toHaveLength(2);
    expect(sent[0].messages?.map((m) => m.role)).toEqual(['user', 'assistant', 'user']);
    const second = await Execution.findById(done.iterations[1].execution_id).lean();
    expect(second).toMatchObject({
      status: 'completed',
      jobId: rerunId,
      rerunOf: { executionId: original.iterations[1].execution_id, fromStep: 1 },
      // Its history is the original's first iteration: it hangs under it in the execution tree.
      parentExecutionId: original.iterations[0].execution_id,
      rootExecutionId: original.iterations[0].execution_id,
    });

    // The original is untouched and lists its rerun; the rerun names its origin.
    const after = (await s.api.get(`/jobs/${id}`)).body.job;
    expect(after).toEqual(original);
    expect(after.status).toBe('awaiting_review');
    const lineage = await s.api.get(`/jobs/${id}/lineage`);
    expect(lineage.body.reruns.map((j: { id: string }) => j.id)).toEqual([rerunId]);
    expect(lineage.body.rerun_of).toBeNull();
    const rerunLineage = await s.api.get(`/jobs/${rerunId}/lineage`);
    expect(rerunLineage.body.rerun_of).toEqual(rerun.body.job.rerun_of);
    expect(rerunLineage.body.reruns).toEqual([]);

    // And it goes on like any job.
    const approved = await s.api.post(`/jobs/${rerunId}/approve`, {});
    expect(approved.body.job.status).toBe('completed');
    expect((await s.api.get(`/jobs/${id}`)).body.job.status).toBe('awaiting_review');
  }, 240_000);

  it('from the last model turn no tool is called and the model is asked once; from the 1st iteration, a changed goal', async () => {
    const s = await setUp();
    const a = randomInt(1_000_000);
    const b = a + 1_000_000;
    const id = await twoIterations(s, a, b);

    const asked = stack.fake.requests.length;
    const last = await s.api.post(`/jobs/${id}/rerun`, { iteration: 2, step: 4 });
    expect(last.status).toBe(201);
    const done = await waitForStatus(s, last.body.job.id, 'awaiting_review', JOB_MS);
    expect([callsOf(a), callsOf(b)]).toEqual([1, 1]);
    expect(stack.fake.requests.length - asked).toBe(1);
    expect(done.artifacts.map((x) => x.content)).toEqual([reply(a), reply(b)]);

    const changed = await s.api.post(`/jobs/${id}/rerun`, { iteration: 1, step: 1, input: 'plain [[request_review]]' });
    expect(changed.status).toBe(201);
    expect(changed.body.job).toMatchObject({ goal: 'plain [[request_review]]', iterations: [] });
    const fresh = await waitForStatus(s, changed.body.job.id, 'awaiting_review', JOB_MS);
    expect(fresh.artifacts.map((x) => x.content)).toEqual(['Echo: plain [[request_review]]']);
    expect([callsOf(a), callsOf(b)]).toEqual([1, 1]);
  }, 240_000);

  it('a bad step is 400 in the documented shape and writes nothing; a running iteration is 409', async () => {
    const s = await setUp();
    const created = await s.api.post('/jobs', {
      agent_id: s.agentId,
      workspace_id: s.workspaceId,
      goal: 'One [[request_review]]',
    });
    const id: string = created.body.job.id;
    await waitForStatus(s, id, 'awaiting_review', JOB_MS);
    const jobs = await Job.countDocuments({});
    const cases: object[] = [
      {},
      { iteration: 1 },
      { step: 1 },
      { iteration: 0, step: 1 },
      { iteration: 2, step: 1 },
      { iteration: 1, step: 3 },
      { iteration: 1, step: 'one' },
      { iteration: 1, step: 1, extra: true },
      { iteration: 1, step: 1, input: 7 },
    ];
    for (const body of cases) {
      const res = await s.api.post(`/jobs/${id}/rerun`, body);
      expect([JSON.stringify(body), res.status, res.body]).toEqual([
        JSON.stringify(body),
        400,
        { error: { code: expect.any(String), message: expect.any(String) } },
      ]);
    }
    expect(await Job.countDocuments({})).toBe(jobs);

    // Another organization's job does not exist for this one.
    const other = currentAs(stack.t, (await buildOrg()).serviceToken);
    expect((await other.post(`/jobs/${id}/rerun`, { iteration: 1, step: 1 })).status).toBe(404);
    expect((await other.get(`/jobs/${id}/steps`)).status).toBe(404);

    // A running iteration has no steps yet: listed as such, and not rerun.
    const slow = await s.api.post('/jobs', {
      agent_id: s.agentId,
      workspace_id: s.workspaceId,
      goal: '[chunks:60][slow:100] x',
    });
    const slowId: string = slow.body.job.id;
    await until(
      async () => (await Job.findById(slowId).lean())?.iterations[0]?.executionId,
      (e) => e !== undefined,
      JOB_MS
    );
    const executionId = (await Job.findById(slowId).lean())!.iterations[0].executionId;
    await until(
      async () => (await Execution.findById(executionId).lean())?.status,
      (st) => st === 'running',
      JOB_MS
    );
    const listed = await s.api.get(`/jobs/${slowId}/steps`);
    expect(listed.body.iterations).toEqual([expect.objectContaining({ n: 1, steps: null, unavailable: 'running' })]);
    const running = await s.api.post(`/jobs/${slowId}/rerun`, { iteration: 1, step: 1 });
    expect([running.status, running.body.error?.code]).toEqual([409, expect.any(String)]);
    expect(await Job.countDocuments({})).toBe(jobs + 1);
    await s.api.post(`/jobs/${slowId}/cancel`, {});
  }, 240_000);
});

describe('a worker killed during a rerun job', () => {
  const { start: startWorker } = useWorkerProcesses(stack, db);

  it('the next worker finishes it: nothing lost, no tool called again, each transition once', async () => {
    const first = await startWorker();
    const s = await setUp();
    const a = randomInt(1_000_000);
    const b = a + 1_000_000;
    const id = await twoIterations(s, a, b, '[slow:300]');

    const asked = stack.fake.requests.length;
    const rerun = await s.api.post(`/jobs/${id}/rerun`, { iteration: 2, step: 4 });
    expect(rerun.status).toBe(201);
    const rerunId: string = rerun.body.job.id;
    // Killed while the rerun iteration's last model turn streams (slowly): once its first delta was sent.
    await until(
      async () => stack.fake.usage[asked]?.outputTokens ?? 0,
      (n) => n > 0,
      JOB_MS,
      50
    );
    const running = await Execution.findOne({ jobId: rerunId }).lean();
    expect(running?.status).toBe('running');
    first.crash();
    await first.exited();
    await startWorker();

    const done = await waitForStatus(s, rerunId, 'awaiting_review', 180_000);
    expect([callsOf(a), callsOf(b)]).toEqual([1, 1]);
    expect(done.iterations).toHaveLength(2);
    expect(done.artifacts.map((x) => x.content)).toEqual([reply(a), reply(b)]);
    const exec = await Execution.findById(done.iterations[1].execution_id).lean();
    expect(exec).toMatchObject({ status: 'completed', result: reply(b), rerunOf: { fromStep: 4 } });
    // The job stream: each transition once, ids without gaps.
    const events = await readEvents(jobStreamId(rerunId));
    expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
    expect(events.filter((e) => e.event === 'job.status').map((e) => e.data.status)).toEqual([
      'queued',
      'running',
      'awaiting_review',
    ]);
    expect(await Job.countDocuments({ rerunOfJobId: id })).toBe(1);
  }, 360_000);
});
