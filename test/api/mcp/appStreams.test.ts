/**
 * Signed app streams (`/mcp-app/jobs/{jobId}/events`): the signed URL streams the job's events (replay, resume
 * after Last-Event-ID, live) without a bearer token; a tampered, expired or other job's signature is 401.
 */
import { signJobEventsUrl } from '../../../commands/appStreams';
import { createJobRecord } from '../../../commands/jobs';
import { memberContext } from '../../../commands/tokens';
import { jobStreamId } from '../../../models';
import { appendEvents } from '../../../commands/eventLog';
import { useServedTestApp } from '../../helpers/app';
import { currentAs, currentError } from '../../helpers/current';
import { buildOrg } from '../../helpers/factories';
import { useTestDatabase } from '../../helpers/mongo';
import { openSse } from '../../helpers/sse';

useTestDatabase();
const app = useServedTestApp({}, { appUrl: true });

/** A job record of a new organization (not started: the test writes its stream itself). */
async function newJob(): Promise<{ jobId: string; organizationId: string }> {
  const org = await buildOrg();
  const api = currentAs(app.t, org.serviceToken);
  const agent = await api.post('/agents', { name: 'A', system_prompt: 'p' });
  const ws = await api.post('/workspaces', { name: 'W' });
  const auth = (await memberContext(org.organizationId, org.userId, 'test', ['*']))!;
  const job = await createJobRecord(auth, {
    agentId: agent.body.agent.id,
    workspaceId: ws.body.workspace.id,
    goal: 'Report',
  });
  return { jobId: job._id, organizationId: org.organizationId };
}
const event = (seq: number): { seq: number; event: string; data: Record<string, unknown> } => ({
  seq,
  event: 'job.status',
  data: { n: seq },
});

it('streams the job’s events to the signed URL: replay, live, resume after Last-Event-ID, end at its terminal status', async () => {
  const { jobId, organizationId } = await newJob();
  await appendEvents(jobStreamId(jobId), [event(1), event(2)]);
  const { url, expiresAt } = await signJobEventsUrl(app.t.config, { organizationId, jobId });
  expect(url.startsWith(`${app.t.config.appUrl}/mcp-app/jobs/${jobId}/events?token=`)).toBe(true);
  expect(expiresAt.getTime()).toBeGreaterThan(Date.now());

  const stream = await openSse(url, { headers: { origin: 'https://app.example' } });
  expect(stream.status).toBe(200);
  expect(stream.headers['access-control-allow-origin']).toBe('*');
  await stream.waitFor(2);
  await appendEvents(jobStreamId(jobId), [event(3)]);
  await stream.waitFor(3);
  stream.close();
  expect(stream.events.map((e) => [e.id, e.event, e.data])).toEqual([
    ['1', 'job.status', '{"n":1}'],
    ['2', 'job.status', '{"n":2}'],
    ['3', 'job.status', '{"n":3}'],
  ]);

  const resumed = await openSse(url, { headers: { 'last-event-id': '2' } });
  await resumed.waitFor(1);
  await appendEvents(jobStreamId(jobId), [
    { seq: 4, event: 'job.status', data: { job_id: jobId, status: 'completed' } },
  ]);
  await resumed.ended; // the terminal status ends the stream
  expect(resumed.events.map((e) => e.id)).toEqual(['3', '4']);

  // The same URL for another organization's job of the same id: never (the signature names the organization).
  const foreign = await signJobEventsUrl(app.t.config, { organizationId: 'org_other', jobId });
  expect((await app.t.request.get(new URL(foreign.url).pathname + new URL(foreign.url).search)).status).toBe(404);
});

it('answers 401 to a tampered, expired or other job’s signature, and to none', async () => {
  const { jobId, organizationId } = await newJob();
  await appendEvents(jobStreamId(jobId), [event(1)]);
  const { url } = await signJobEventsUrl(app.t.config, { organizationId, jobId });
  const token = new URL(url).searchParams.get('token')!;
  const [header, payload, signature] = token.split('.');
  const flipped = `${signature.slice(0, -2)}${signature.at(-2) === 'A' ? 'B' : 'A'}${signature.at(-1)}`;
  const forgedPayload = Buffer.from(
    JSON.stringify({ ...JSON.parse(Buffer.from(payload, 'base64url').toString()), exp: 9999999999 })
  ).toString('base64url');
  const expired = await signJobEventsUrl(app.t.config, { organizationId, jobId, expiresInSeconds: -5 });
  const otherJob = await signJobEventsUrl(app.t.config, { organizationId, jobId: (await newJob()).jobId });
  const path = `/mcp-app/jobs/${jobId}/events`;
  const cases: Array<[string, string]> = [
    [`${path}?token=${header}.${payload}.${flipped}`, 'Invalid signature'],
    [`${path}?token=${header}.${forgedPayload}.${signature}`, 'Invalid signature'],
    [`${path}?token=${new URL(expired.url).searchParams.get('token')}`, 'Signature expired'],
    [`${path}?token=${new URL(otherJob.url).searchParams.get('token')}`, 'Invalid signature'],
  ];
  for (const [target, message] of cases) {
    const res = await app.t.request.get(target);
    expect({ target, status: res.status, body: res.body }).toEqual({
      target,
      status: 401,
      body: currentError('unauthorized', message),
    });
  }
  const none = await app.t.request.get(path);
  expect(none.status).toBe(400);
});
