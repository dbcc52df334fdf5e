/**
 * GET /api/events, the organization's activity stream (commands/organizationEvents.ts), over real HTTP: live
 * delivery through wake-ups (the fallback poll is set a minute apart, longer than the test), another organization's
 * events never seen, replay after a cursor and a resume without gaps or repeats, the `types` filter, bad input.
 */
import { bearer, buildMember, buildOrg, buildServiceToken } from '../../helpers/factories';
import { useTestDatabase } from '../../helpers/mongo';
import { openSse, waitForEvent, type LiveStream, type SseEvent } from '../../helpers/sse';
import { useServedTestApp } from '../../helpers/app';
import { v1As } from '../../helpers/v1';

useTestDatabase();
jest.setTimeout(60_000);
const served = useServedTestApp({ EVENT_POLL_MS: '60000' });

interface Body {
  id: string;
  type: string;
  organizationId: string;
  data: { task?: { id: string; title: string } };
}
const body = (e: SseEvent): Body => JSON.parse(e.data) as Body;
const taskCreated = (e: SseEvent): boolean => e.event === 'task.created';

async function stream(token: string, query = '', headers: Record<string, string> = {}): Promise<LiveStream> {
  const s = await openSse(`${served.base}/api/events${query}`, {
    headers: { authorization: bearer(token), ...headers },
  });
  expect(s.status).toBe(200);
  return s;
}

async function createTask(token: string, title: string, extra: object = {}): Promise<string> {
  const res = await v1As(served.t, token).post('/tasks', { title, ...extra });
  expect(res.status).toBe(200);
  return res.body.task.id as string;
}

/** Waits until the stream has a task.created event for each title. */
async function waitForTitles(s: LiveStream, titles: string[]): Promise<void> {
  for (const title of titles)
    await waitForEvent(s, (e) => taskCreated(e) && body(e).data.task?.title === title, 30_000);
}

const createdTitles = (s: LiveStream): string[] => s.events.filter(taskCreated).map((e) => body(e).data.task!.title);

test('live, isolated by organization, replayed after a cursor and resumed without gaps or repeats', async () => {
  const org = await buildOrg();
  const other = await buildOrg();
  const live = await stream(org.serviceToken);
  const otherLive = await stream(other.serviceToken);

  await createTask(org.apiToken, 'one');
  await createTask(other.apiToken, 'theirs');
  await waitForTitles(live, ['one']);
  await waitForTitles(otherLive, ['theirs']);
  const first = live.events.find(taskCreated)!;
  expect(first.id).toMatch(/^\d+-evt_/);
  expect(body(first)).toMatchObject({ type: 'task.created', organizationId: org.organizationId });

  for (const title of ['two', 'three']) await createTask(org.apiToken, title);
  await waitForTitles(live, ['two', 'three']);
  expect(createdTitles(live)).toEqual(['one', 'two', 'three']);
  const afterTwo = live.events.find((e) => taskCreated(e) && body(e).data.task!.title === 'two')!.id!;
  live.close();

  // While no client listens: two more.
  for (const title of ['four', 'five']) await createTask(org.apiToken, title);
  // A client resuming after `two` (EventSource's Last-Event-ID) gets three, four, five once each, then live ones.
  const resumed = await stream(org.serviceToken, '', { 'Last-Event-ID': afterTwo });
  await waitForTitles(resumed, ['three', 'four', 'five']);
  await createTask(org.apiToken, 'six');
  await waitForTitles(resumed, ['six']);
  expect(createdTitles(resumed)).toEqual(['three', 'four', 'five', 'six']);
  const ids = resumed.events.map((e) => e.id);
  expect(new Set(ids).size).toBe(ids.length);
  // `?lastEventId=` replays the same way.
  const replayed = await stream(org.serviceToken, `?lastEventId=${encodeURIComponent(first.id!)}`);
  await waitForTitles(replayed, ['six']);
  expect(createdTitles(replayed)).toEqual(['two', 'three', 'four', 'five', 'six']);

  // Nothing of the first organization reached the other's stream.
  expect(otherLive.events.length).toBeGreaterThan(0);
  for (const e of otherLive.events) expect(body(e).organizationId).toBe(other.organizationId);
  expect(createdTitles(otherLive)).toEqual(['theirs']);
  for (const s of [resumed, replayed, otherLive]) s.close();
});

test('types keeps only the event types asked for', async () => {
  const org = await buildOrg();
  const member = await buildMember(org.organizationId);
  const s = await stream(org.serviceToken, '?types=task.assigned,chat.');
  await createTask(org.apiToken, 'unassigned');
  await createTask(org.apiToken, 'assigned', { assignTo: member.userId });
  await waitForEvent(s, (e) => e.event === 'task.assigned', 30_000);
  expect(s.events.map((e) => e.event)).toEqual(['task.assigned']);
  expect(body(s.events[0]).data.task!.title).toBe('assigned');
  s.close();
});

test('bad input is a 400, no token a 401, a token without the scope a 403', async () => {
  const org = await buildOrg();
  const bad = await served.t.request
    .get('/api/events')
    .set('Authorization', bearer(org.serviceToken))
    .set('Last-Event-ID', '17');
  expect(bad.status).toBe(400);
  expect(bad.body.error.message).toMatch(/Last-Event-ID/);
  const badTypes = await served.t.request
    .get('/api/events?types=job.;drop')
    .set('Authorization', bearer(org.serviceToken));
  expect(badTypes.status).toBe(400);
  expect((await served.t.request.get('/api/events')).status).toBe(401);
  const jobsOnly = await buildServiceToken(org, ['jobs:read']);
  expect((await served.t.request.get('/api/events').set('Authorization', bearer(jobsOnly))).status).toBe(403);
});
