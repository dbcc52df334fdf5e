/**
 * Streams read to the end (issue 36 point 3): on every stream route that ends, a client resuming at or past the
 * terminal event gets `204 No Content` (what stops a browser's EventSource from reconnecting), never that event
 * again; over real HTTP, with a bearer token and with the console's session cookie alone (what a same-origin
 * EventSource sends). Routes: the v1 execution stream, the job stream, the clone progress stream and the signed app
 * stream (the MCP endpoint's resumed streams: test/api/mcp/mcp.test.ts; chats have no terminal event:
 * test/api/current/session.test.ts).
 */
import { signJobEventsUrl } from '../../commands/appStreams';
import { appendEvents } from '../../commands/eventLog';
import { createJobRecord } from '../../commands/jobs';
import { memberContext } from '../../commands/tokens';
import { jobStreamId, repoStreamId, WorkspaceRepo } from '../../models';
import { currentAs } from '../helpers/current';
import { bearer, buildOrg } from '../helpers/factories';
import { useTestDatabase } from '../helpers/mongo';
import { openSse, type SseEvent } from '../helpers/sse';
import { useExecutionStack } from '../helpers/worker';

useTestDatabase();
const stack = useExecutionStack('fully-read', { DEFAULT_MODEL: 'claude-test' }, { appUrl: true });

interface Org {
  organizationId: string;
  userId: string;
  apiToken: string;
  serviceToken: string;
  /** The `Cookie` header of a console session of the owner. */
  cookie: string;
}

async function setup(): Promise<Org> {
  const org = await buildOrg();
  const res = await stack.t.request.post('/api/session').set('Origin', stack.base).send({ token: org.apiToken });
  expect(res.status).toBe(200);
  const cookie = (res.headers['set-cookie'] as unknown as string[])[0].split(';')[0];
  return { ...org, cookie };
}

/** Reads a stream the server ends; returns its events. */
async function readAll(url: string, headers: Record<string, string>): Promise<SseEvent[]> {
  const stream = await openSse(url, { headers });
  expect(stream.status).toBe(200);
  await stream.ended;
  return stream.events;
}

/**
 * Joins a finished stream at and past its terminal event, as the header and as the query, with each credential:
 * 204 and no body every time; one before the end gets the terminal event once.
 */
async function expectFullyRead(
  url: string,
  credentials: Array<Record<string, string>>,
  terminal: SseEvent
): Promise<void> {
  const joins: Array<{ suffix: string; headers: Record<string, string> }> = [
    { suffix: '', headers: { 'last-event-id': terminal.id! } },
    { suffix: '', headers: { 'last-event-id': '9999' } },
    { suffix: `${url.includes('?') ? '&' : '?'}lastEventId=${terminal.id}`, headers: {} },
  ];
  for (const credential of credentials) {
    for (const join of joins) {
      const res = await fetch(`${url}${join.suffix}`, {
        headers: { accept: 'text/event-stream', ...credential, ...join.headers },
      });
      expect([res.status, await res.text()]).toEqual([204, '']);
    }
    const before = await readAll(url, { ...credential, 'last-event-id': String(Number(terminal.id) - 1) });
    expect(before).toEqual([terminal]);
  }
}

it('the v1 execution stream: 204 once its terminal event is read, with a bearer token or the cookie alone', async () => {
  const org = await setup();
  const agent = await stack.t.request
    .post('/api/v1/agents')
    .set('Authorization', bearer(org.apiToken))
    .send({ name: 'Echo', systemPrompt: 'Be brief.' });
  const done = await stack.t.request
    .post(`/api/v1/agents/${agent.body.id}/execute`)
    .set('Authorization', bearer(org.apiToken))
    .send({ message: '[chunks:3]' });
  expect(done.status).toBe(200);
  const url = `${stack.base}/api/v1/executions/${done.body.executionId}/stream`;
  // What a same-origin EventSource does: the cookie alone; the whole stream, then the reconnection ends it.
  const all = await readAll(url, { cookie: org.cookie });
  const terminal = all.at(-1)!;
  expect(terminal.event).toBe('result');
  expect(all.map((e) => Number(e.id))).toEqual(all.map((_, i) => i + 1));
  await expectFullyRead(url, [{ cookie: org.cookie }, { authorization: bearer(org.apiToken) }], terminal);
});

it('the job stream and its signed app stream: 204 once the terminal status is read', async () => {
  const org = await setup();
  const api = currentAs(stack.t, org.serviceToken);
  const agent = await api.post('/agents', { name: 'A', system_prompt: 'p' });
  const ws = await api.post('/workspaces', { name: 'W' });
  const auth = (await memberContext(org.organizationId, org.userId, 'test', ['*']))!;
  const job = await createJobRecord(auth, {
    agentId: agent.body.agent.id,
    workspaceId: ws.body.workspace.id,
    goal: 'G',
  });
  await appendEvents(jobStreamId(job._id), [
    { seq: 1, event: 'job.status', data: { job_id: job._id, status: 'running' } },
    { seq: 2, event: 'job.status', data: { job_id: job._id, status: 'completed' } },
  ]);
  const url = `${stack.base}/api/jobs/${job._id}/events`;
  const all = await readAll(`${url}?lastEventId=0`, { cookie: org.cookie });
  expect(all.map((e) => e.id)).toEqual(['1', '2']);
  await expectFullyRead(url, [{ cookie: org.cookie }, { authorization: bearer(org.serviceToken) }], all[1]);

  const signed = await signJobEventsUrl(stack.t.config, { organizationId: org.organizationId, jobId: job._id });
  expect(await readAll(signed.url, {})).toEqual(all);
  await expectFullyRead(signed.url, [{}], all[1]);
});

it('the clone progress stream: 204 once clone.completed is read', async () => {
  const org = await setup();
  const ws = await currentAs(stack.t, org.serviceToken).post('/workspaces', { name: 'Repos' });
  const repoId = `repo_fullyread${Date.now()}`;
  await WorkspaceRepo.create({
    _id: repoId,
    organizationId: org.organizationId,
    spaceId: ws.body.workspace.id,
    url: 'https://git.example/r.git',
    status: 'ready',
    createdBy: org.userId,
  });
  await appendEvents(repoStreamId(repoId), [
    { seq: 1, event: 'clone.progress', data: { message: 'Receiving objects' } },
    { seq: 2, event: 'clone.completed', data: { commit: 'abc' } },
  ]);
  const url = `${stack.base}/api/workspaces/${ws.body.workspace.id}/repos/${repoId}/events`;
  const all = await readAll(url, { cookie: org.cookie });
  expect(all.map((e) => e.event)).toEqual(['clone.progress', 'clone.completed']);
  await expectFullyRead(url, [{ cookie: org.cookie }, { authorization: bearer(org.serviceToken) }], all[1]);
});

it('the OpenAPI document lists the 204 of every stream route that ends', async () => {
  const doc = (await stack.t.request.get('/api/openapi.json')).body;
  for (const [path, method] of [
    ['/api/v1/executions/{id}/stream', 'get'],
    ['/api/jobs/{id}/events', 'get'],
    ['/api/workspaces/{id}/repos/{repoId}/events', 'get'],
    ['/mcp-app/jobs/{jobId}/events', 'get'],
    ['/mcp', 'get'],
  ]) {
    const answer = doc.paths[path][method].responses['204'];
    expect(answer.description).toMatch(/read the whole stream/);
    expect(answer.content).toBeUndefined();
  }
});
