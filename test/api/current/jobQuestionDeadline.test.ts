/**
 * A blocked job's question under the review's deadline (issue 40 point 2, for questions): real api over HTTP, real
 * Temporal and worker, the fake model (which echoes `[[request_input: …]]` from the goal). A 2 s deadline fires each
 * policy once on a job waiting for an answer, as it does on a review; a reminded question is still answered as usual.
 */
import { readEvents } from '../../../commands/eventLog';
import { jobStreamId, ServiceEvent } from '../../../models';
import { jobSetup, newJob, waitForStatus } from '../../helpers/jobs';
import { useTestDatabase } from '../../helpers/mongo';
import { until } from '../../helpers/until';
import { useExecutionStack } from '../../helpers/worker';

useTestDatabase();
const stack = useExecutionStack('job-question-deadline', { DEFAULT_MODEL: 'claude-test' });

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const streamEvents = async (id: string, event: string) =>
  (await readEvents(jobStreamId(id))).filter((e) => e.event === event);

it('a 2 s deadline fires each policy once on a blocked job’s question', async () => {
  const s = await jobSetup(stack.t);
  const job = async (id: string) => (await s.api.get(`/jobs/${id}`)).body.job;
  const policies = ['remind', 'escalate', 'auto_approve', 'auto_reject', 'cancel'] as const;
  const ids = Object.fromEntries(
    await Promise.all(
      policies.map(async (p) => [
        p,
        await newJob(s, `Policy ${p} [[request_input: Which city?]]`, {
          review: { timeout: 'PT2S', on_timeout: p, ...(p === 'escalate' ? { escalate_to: 'usr_lead' } : {}) },
        }),
      ])
    )
  ) as Record<(typeof policies)[number], string>;
  // A question without a deadline waits as before.
  const plain = await newJob(s, 'No deadline [[request_input: Which city?]]');

  const approved = await waitForStatus(s, ids.auto_approve, 'completed', 60_000);
  expect(approved).toMatchObject({ review: { state: 'approved', decision: { action: 'auto_approve', by: null } } });
  const rejected = await waitForStatus(s, ids.auto_reject, 'failed', 60_000);
  expect(rejected).toMatchObject({ review: { state: 'rejected' }, error: { code: 'review_rejected' } });
  expect((rejected as unknown as { error: { message: string } }).error.message).toContain('question');
  expect(await waitForStatus(s, ids.cancel, 'cancelled', 60_000)).toMatchObject({ review: { state: 'expired' } });
  const reminded = await until(
    () => job(ids.remind),
    (j) => j.review.overdue_at !== null,
    60_000
  );
  expect(reminded).toMatchObject({
    status: 'blocked',
    question: 'Which city?',
    review: { on_timeout: 'remind', deadline: expect.any(String), assignee: expect.any(String) },
  });
  const escalated = await until(
    () => job(ids.escalate),
    (j) => j.review.overdue_at !== null,
    60_000
  );
  expect(escalated).toMatchObject({
    status: 'blocked',
    review: { assignee: 'usr_lead', escalated_from: expect.any(String) },
  });

  // Nothing fires twice.
  await sleep(3000);
  const events = async (type: string) => ServiceEvent.find({ organizationId: s.organizationId, type }).lean();
  expect(await events('job.review_overdue')).toHaveLength(1);
  expect(await events('job.review_escalated')).toHaveLength(1);
  for (const id of [ids.remind, ids.escalate]) expect(await streamEvents(id, 'review.overdue')).toHaveLength(1);
  for (const id of [ids.auto_approve, ids.auto_reject, ids.cancel])
    expect((await streamEvents(id, 'job.status')).map((e) => e.data.status)).toHaveLength(4);
  const waiting = await job(plain);
  expect(waiting).toMatchObject({ status: 'blocked', review: { deadline: null, overdue_at: null } });

  // A reminded question is still answered as usual.
  const resumed = await s.api.post(`/jobs/${ids.remind}/resume`, { input: 'Paris' });
  expect(resumed.status).toBe(200);
  const done = await waitForStatus(s, ids.remind, 'completed', 60_000);
  expect(done.iterations.map((i) => i.reason)).toEqual(['goal', 'input']);
}, 180_000);
