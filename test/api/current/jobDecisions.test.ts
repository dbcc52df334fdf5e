/**
 * One decision on many jobs (POST /api/jobs/decisions, issue 40 point 3): real api over HTTP, real Temporal and
 * worker, the fake model. Each job is decided independently and answered in the order named: taken, refused for its
 * state (409's code and current state), or not found (another organization's job too); the records agree with the
 * workflows; a repeated request with its Idempotency-Key gets the first answer and decides nothing twice; bad bodies
 * are 400 before anything is decided.
 */
import { Job } from '../../../models';
import { jobStatusQuery } from '../../../workflows/definitions';
import { jobWorkflowId } from '../../../workflows/ids';
import { jobSetup, newJob, waitForStatus } from '../../helpers/jobs';
import { useTestDatabase } from '../../helpers/mongo';
import { useExecutionStack } from '../../helpers/worker';

useTestDatabase();
const stack = useExecutionStack('job-decisions', { DEFAULT_MODEL: 'claude-test' });
jest.setTimeout(120_000);

const workflowStatus = async (id: string): Promise<string> =>
  (await stack.t.temporal.client.workflow.getHandle(jobWorkflowId(id)).query(jobStatusQuery)).status;

it('approves many jobs at once: each answered on its own, partial success shown, records and workflows agree', async () => {
  const s = await jobSetup(stack.t);
  const waiting = await Promise.all([1, 2, 3].map((n) => newJob(s, `Draft ${n} [[request_review]]`)));
  const done = await newJob(s, 'Done at once');
  await Promise.all([
    ...waiting.map((id) => waitForStatus(s, id, 'awaiting_review')),
    waitForStatus(s, done, 'completed'),
  ]);
  const foreign = await newJob(await jobSetup(stack.t), 'Not yours [[request_review]]');

  const ids = [waiting[0], done, 'job_unknown', waiting[1], foreign, waiting[2]];
  const res = await s.api.post('/jobs/decisions', { action: 'approve', job_ids: ids });
  expect(res.status).toBe(200);
  const results = res.body.results as { job_id: string; ok: boolean; job?: { status: string }; error?: object }[];
  expect(results.map((r) => r.job_id)).toEqual(ids);
  for (const i of [0, 3, 5]) {
    expect(results[i]).toMatchObject({ ok: true, job: { status: 'completed', review: { state: 'approved' } } });
    expect(await workflowStatus(ids[i])).toBe('completed');
  }
  expect(results[1]).toEqual({
    job_id: done,
    ok: false,
    error: {
      code: 'conflict',
      message: 'Cannot approve a job that is completed',
      status: 409,
      current_state: 'completed',
    },
  });
  for (const i of [2, 4])
    expect(results[i]).toEqual({
      job_id: ids[i],
      ok: false,
      error: { code: 'not_found', message: 'Job not found', status: 404 },
    });
  // Another organization's job was not touched.
  expect((await Job.findById(foreign).lean())?.status).not.toBe('completed');
});

it('iterates many jobs with one feedback; a repeat with the same Idempotency-Key decides nothing twice', async () => {
  const s = await jobSetup(stack.t);
  const ids = await Promise.all([1, 2].map((n) => newJob(s, `Essay ${n} [[request_review]]`)));
  await Promise.all(ids.map((id) => waitForStatus(s, id, 'awaiting_review')));
  const body = { action: 'iterate', job_ids: ids, feedback: 'Shorter [[request_review]]' };
  const first = await s.api.post('/jobs/decisions', body).set('Idempotency-Key', 'bulk-iterate-1');
  expect(first.status).toBe(200);
  for (const r of first.body.results)
    expect(r).toMatchObject({ ok: true, job: { review: { state: 'changes_requested' } } });
  await Promise.all(ids.map((id) => waitForStatus(s, id, 'awaiting_review')));
  const again = await s.api.post('/jobs/decisions', body).set('Idempotency-Key', 'bulk-iterate-1');
  expect(again.status).toBe(200);
  expect(again.headers['idempotent-replayed']).toBe('true');
  expect(again.body).toEqual(first.body);
  // One iteration per decision: the goal's and the feedback's, no third.
  for (const id of ids) {
    const job = await waitForStatus(s, id, 'awaiting_review');
    expect(job.iterations.map((i) => i.reason)).toEqual(['goal', 'feedback']);
  }
});

it('bad bodies are 400 before anything is decided', async () => {
  const s = await jobSetup(stack.t);
  const id = await newJob(s, 'Wait [[request_review]]');
  await waitForStatus(s, id, 'awaiting_review');
  const bad = [
    {},
    { action: 'approve', job_ids: [] },
    { action: 'approve', job_ids: Array.from({ length: 101 }, (_, i) => `job_${i}`) },
    { action: 'approve', job_ids: [id, id] },
    { action: 'reject', job_ids: [id] },
    { action: 'iterate', job_ids: [id] },
    { action: 'resume', job_ids: [id] },
    { action: 'approve', job_ids: [id], feedback: 'not for approve' },
    { action: 'cancel', job_ids: [id], input: 'x' },
  ];
  for (const body of bad) {
    const res = await s.api.post('/jobs/decisions', body);
    expect({ body, status: res.status, code: res.body.error?.code }).toEqual({
      body,
      status: 400,
      code: 'validation_failed',
    });
  }
  expect(await workflowStatus(id)).toBe('awaiting_review');
});
