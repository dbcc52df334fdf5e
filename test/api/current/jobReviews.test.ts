/**
 * Typed reviews, deadlines and the review inbox (issue 40 points 1 and 2): real api over HTTP, real Temporal, the
 * job workflow in worker processes (one is killed while a deadline is pending), the fake model, and webhooks
 * delivered to a real HTTPS receiver on loopback. Payloads are validated against their schemas in the update's
 * validator (400 and nothing changes); two reviewers racing get one decision; a 2 s deadline fires each policy
 * once; the inbox lists waiting reviews oldest deadline first, by assignee, page by page.
 */
import { readEvents } from '../../../commands/eventLog';
import { jobStreamId, ServiceEvent } from '../../../models';
import { jobStatusQuery } from '../../../workflows/definitions';
import { jobWorkflowId } from '../../../workflows/ids';
import { startWebhookReceiver, type WebhookReceiver } from '../../../scripts/fakes/webhookReceiver';
import { bearer } from '../../helpers/factories';
import { jobSetup, newJob, waitForStatus, type JobSetup } from '../../helpers/jobs';
import { useTestDatabase } from '../../helpers/mongo';
import type { Spawned } from '../../helpers/processes';
import { closeAfterAll } from '../../helpers/teardown';
import { until } from '../../helpers/until';
import { startWebhookWorker } from '../../helpers/webhooks';
import { useExecutionStack } from '../../helpers/worker';

const db = useTestDatabase();
const stack = useExecutionStack(
  'job-reviews',
  { DEFAULT_MODEL: 'claude-test', WEBHOOK_ALLOW_PRIVATE: 'true' },
  { worker: false }
);
jest.setTimeout(180_000);

let receiver: WebhookReceiver;
let worker: Spawned | undefined;
const startWorker = async (): Promise<Spawned> =>
  (worker = await startWebhookWorker({
    mongodbUri: db.uri,
    taskQueue: stack.env.TEMPORAL_TASK_QUEUE,
    caFile: receiver.caFile,
    env: stack.env,
  }));
beforeAll(async () => {
  receiver = await startWebhookReceiver();
  await startWorker();
}, 120_000);
closeAfterAll(async () => {
  worker?.crash();
  await receiver?.close();
});

const workflowStatus = async (id: string): Promise<string> =>
  (await stack.t.temporal.client.workflow.getHandle(jobWorkflowId(id)).query(jobStatusQuery)).status;
const job = async (s: JobSetup, id: string) => (await s.api.get(`/jobs/${id}`)).body.job;
const streamEvents = async (id: string, event: string) =>
  (await readEvents(jobStreamId(id))).filter((e) => e.event === event);
const serviceEvents = async (organizationId: string, type: string) =>
  ServiceEvent.find({ organizationId, type }).lean();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const CHOOSE = {
  name: 'choose',
  schema: {
    type: 'object',
    additionalProperties: false,
    required: ['option'],
    properties: { option: { enum: ['a', 'b', 'c'] } },
  },
};

it('iterate without feedback is 400 from the review’s schema and changes nothing; the job shows what it waits for', async () => {
  const s = await jobSetup(stack.t);
  const id = await newJob(s, 'Draft [[request_review]]');
  const waiting = await waitForStatus(s, id, 'awaiting_review');
  const review = (waiting as unknown as { review: { actions: { name: string; schema: object }[] } }).review;
  expect(review.actions.map((a) => a.name)).toEqual(['approve', 'iterate']);
  expect(review.actions[1].schema).toMatchObject({ required: ['feedback'] });
  const [updated] = (await streamEvents(id, 'review.updated')).slice(-1);
  expect(updated.data).toMatchObject({ review_state: 'pending', actions: review.actions, deadline: null });

  const res = await s.api.post(`/jobs/${id}/iterate`, {});
  expect([res.status, res.body.error]).toEqual([
    400,
    { code: 'validation_failed', message: 'Invalid payload for iterate: missing required field feedback' },
  ]);
  const after = await job(s, id);
  expect(after).toMatchObject({ status: 'awaiting_review', review: { state: 'pending', decision: null } });
  expect(after.iterations).toHaveLength(1);
  expect(await workflowStatus(id)).toBe('awaiting_review');
  // The same through the generic decision route; then a valid iterate goes on.
  const generic = await s.api.post(`/jobs/${id}/decision`, { action: 'iterate', payload: { feedback: 7 } });
  expect([generic.status, generic.body.error.code]).toEqual([400, 'validation_failed']);
  const ok = await s.api.post(`/jobs/${id}/iterate`, { feedback: 'Shorter [[request_review]]' });
  expect(ok.status).toBe(200);
  expect(ok.body.job.review.decision).toMatchObject({
    action: 'iterate',
    payload: { feedback: 'Shorter [[request_review]]' },
  });
});

it('a declared action’s payload is validated against its schema; declared schemas are checked at creation', async () => {
  const s = await jobSetup(stack.t);
  const bad = [
    { actions: [{ name: 'choose', schema: { type: 'objekt' } }] },
    { actions: [{ name: 'approve' }] },
    { actions: [CHOOSE, CHOOSE] },
    { timeout: 'P1Y' },
    { on_timeout: 'cancel' },
    { timeout: 5, on_timeout: 'escalate' },
  ];
  for (const review of bad) {
    const res = await s.api.post('/jobs', { agent_id: s.agentId, workspace_id: s.workspaceId, goal: 'x', review });
    expect({ review, status: res.status, code: res.body.error?.code }).toEqual({
      review,
      status: 400,
      code: 'validation_failed',
    });
  }
  const id = await newJob(s, 'Pick one [[request_review]]', { review: { actions: [CHOOSE] } });
  const waiting = (await waitForStatus(s, id, 'awaiting_review')) as unknown as { review: { actions: object[] } };
  expect(waiting.review.actions).toContainEqual({ ...CHOOSE, effect: 'complete' });
  for (const [body, message] of [
    [{ action: 'choose', payload: { option: 'd' } }, 'Invalid payload for choose: option must be one of "a", "b", "c"'],
    [{ action: 'choose' }, 'Invalid payload for choose: missing required field option'],
    [{ action: 'pick', payload: {} }, "Unknown action: pick (this job's review declares choose)"],
  ] as const) {
    const res = await s.api.post(`/jobs/${id}/decision`, body);
    expect([res.status, res.body.error]).toEqual([400, { code: 'validation_failed', message }]);
  }
  expect(await workflowStatus(id)).toBe('awaiting_review');
  const res = await s.api.post(`/jobs/${id}/decision`, { action: 'choose', payload: { option: 'b' } });
  expect(res.status).toBe(200);
  expect(res.body.job).toMatchObject({
    status: 'completed',
    review: { state: 'approved', decision: { action: 'choose', payload: { option: 'b' }, by: expect.any(String) } },
  });
});

it('two reviewers approving at once: one 200, one 409 with the state, one approval recorded', async () => {
  const s = await jobSetup(stack.t);
  const id = await newJob(s, 'Race [[request_review]]');
  await waitForStatus(s, id, 'awaiting_review');
  const [a, b] = await Promise.all([s.api.post(`/jobs/${id}/approve`, {}), s.api.post(`/jobs/${id}/approve`, {})]);
  expect([a.status, b.status].sort()).toEqual([200, 409]);
  const loser = a.status === 409 ? a : b;
  expect(loser.body.error).toMatchObject({ code: 'conflict', current_state: expect.any(String) });
  expect((a.status === 200 ? a : b).body.job.status).toBe('completed');
  expect(await workflowStatus(id)).toBe('completed');
  expect(await serviceEvents(s.organizationId, 'job.done')).toHaveLength(1);
  const statuses = (await streamEvents(id, 'job.status')).map((e) => e.data.status);
  expect(statuses).toEqual(['queued', 'running', 'awaiting_review', 'completed']);
  // The same Idempotency-Key twice: one decision, the first answer repeated.
  const other = await newJob(s, 'Again [[request_review]]');
  await waitForStatus(s, other, 'awaiting_review');
  const first = await s.api.post(`/jobs/${other}/approve`, {}).set('Idempotency-Key', `approve-${other}`);
  const again = await s.api.post(`/jobs/${other}/approve`, {}).set('Idempotency-Key', `approve-${other}`);
  expect([first.status, again.status, again.headers['idempotent-replayed']]).toEqual([200, 200, 'true']);
  expect(await serviceEvents(s.organizationId, 'job.done')).toHaveLength(2);
});

it('a 2 s review deadline fires each policy once', async () => {
  const s = await jobSetup(stack.t);
  const put = await stack.t.request
    .put('/api/messaging-integration')
    .set('Authorization', bearer(s.token))
    .send({ url: receiver.url });
  expect(put.status).toBe(201);
  const policies = ['remind', 'escalate', 'auto_approve', 'auto_reject', 'cancel'] as const;
  const ids = Object.fromEntries(
    await Promise.all(
      policies.map(async (p) => [
        p,
        await newJob(s, `Policy ${p} [[request_review]]`, {
          review: { timeout: 'PT2S', on_timeout: p, ...(p === 'escalate' ? { escalate_to: 'usr_lead' } : {}) },
        }),
      ])
    )
  ) as Record<(typeof policies)[number], string>;
  const approved = await waitForStatus(s, ids.auto_approve, 'completed');
  expect(approved).toMatchObject({ review: { state: 'approved', decision: { action: 'auto_approve', by: null } } });
  expect(await waitForStatus(s, ids.auto_reject, 'failed')).toMatchObject({
    review: { state: 'rejected' },
    error: { code: 'review_rejected' },
  });
  expect(await waitForStatus(s, ids.cancel, 'cancelled')).toMatchObject({ review: { state: 'expired' } });
  const reminded = await until(
    () => job(s, ids.remind),
    (j) => j.review.overdue_at !== null
  );
  expect(reminded).toMatchObject({ status: 'awaiting_review', review: { on_timeout: 'remind' } });
  const escalated = await until(
    () => job(s, ids.escalate),
    (j) => j.review.overdue_at !== null
  );
  expect(escalated).toMatchObject({
    status: 'awaiting_review',
    review: { assignee: 'usr_lead', escalated_from: expect.any(String) },
  });
  const [overdue] = await serviceEvents(s.organizationId, 'job.review_overdue');
  await receiver.waitFor(overdue._id, 1);
  // Nothing fires twice.
  await sleep(3000);
  expect(receiver.of(overdue._id)).toHaveLength(1);
  expect(await serviceEvents(s.organizationId, 'job.review_overdue')).toHaveLength(1);
  expect(await serviceEvents(s.organizationId, 'job.review_escalated')).toHaveLength(1);
  for (const id of [ids.remind, ids.escalate]) {
    expect(await streamEvents(id, 'review.overdue')).toHaveLength(1);
    expect(await workflowStatus(id)).toBe('awaiting_review');
  }
  for (const id of [ids.auto_approve, ids.auto_reject, ids.cancel])
    expect((await streamEvents(id, 'job.status')).map((e) => e.data.status)).toHaveLength(4);
  // A reminded review is still answered as usual.
  const done = await s.api.post(`/jobs/${ids.remind}/approve`, {});
  expect(done.body.job.status).toBe('completed');
});

it('the inbox lists waiting reviews oldest deadline first (none last), by assignee, page by page', async () => {
  const s = await jobSetup(stack.t);
  const late = await newJob(s, 'Late [[request_review]]', { review: { timeout: 3600 } });
  const soon = await newJob(s, 'Soon [[request_review]]', { review: { timeout: 'PT30M', assignee: 'usr_ann' } });
  const never = await newJob(s, 'Never [[request_review]]');
  const finished = await newJob(s, 'Done at once');
  await Promise.all([
    ...[late, soon, never].map((id) => waitForStatus(s, id, 'awaiting_review')),
    waitForStatus(s, finished, 'completed'),
  ]);
  const all = await s.api.get('/jobs/inbox');
  expect(all.status).toBe(200);
  expect(all.body.jobs.map((j: { id: string }) => j.id)).toEqual([soon, late, never]);
  expect(all.body.jobs.map((j: { review: { deadline: string | null } }) => j.review.deadline !== null)).toEqual([
    true,
    true,
    false,
  ]);
  const ann = await s.api.get('/jobs/inbox?assignee=usr_ann');
  expect(ann.body.jobs.map((j: { id: string }) => j.id)).toEqual([soon]);
  const pages: string[] = [];
  let cursor: string | null = null;
  do {
    const page: { body: { jobs: { id: string }[]; next_cursor: string | null } } = await s.api.get(
      `/jobs/inbox?limit=1${cursor ? `&cursor=${cursor}` : ''}`
    );
    pages.push(...page.body.jobs.map((j) => j.id));
    cursor = page.body.next_cursor;
  } while (cursor);
  expect(pages).toEqual([soon, late, never]);
  expect((await s.api.get('/jobs/inbox?cursor=nope')).status).toBe(400);
  // Another organization sees none of them.
  expect((await (await jobSetup(stack.t)).api.get('/jobs/inbox')).body.jobs).toEqual([]);
});

it('a worker killed while a review deadline is pending: the timer fires once after a new worker starts', async () => {
  const s = await jobSetup(stack.t);
  const id = await newJob(s, 'Timed [[request_review]]', { review: { timeout: 3, on_timeout: 'remind' } });
  await waitForStatus(s, id, 'awaiting_review');
  worker!.crash();
  await worker!.exited();
  await sleep(4000); // the deadline passes with no worker
  expect((await job(s, id)).review.overdue_at).toBeNull();
  await startWorker();
  await until(
    () => job(s, id),
    (j) => j.review.overdue_at !== null,
    60_000
  );
  await sleep(2000);
  expect(await streamEvents(id, 'review.overdue')).toHaveLength(1);
  expect(await serviceEvents(s.organizationId, 'job.review_overdue')).toHaveLength(1);
  expect(await workflowStatus(id)).toBe('awaiting_review');
  const events = await readEvents(jobStreamId(id));
  expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
});
