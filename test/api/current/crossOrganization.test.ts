/**
 * Every current-surface route with an id in its path answers 404 when the id belongs to another organization
 * (table-driven from the route declarations: a new id route must get a line in `bodies` below).
 */
import type { AppDeps } from '../../../api/deps';
import { currentRoutes } from '../../../api/current';
import { AGENT_LIBRARY, libraryAgentId } from '../../../commands/agentLibrary';
import { recordEvent } from '../../../commands/serviceEvents';
import { Execution } from '../../../models';
import { useTestApp } from '../../helpers/app';
import { currentAs, noContract } from '../../helpers/current';
import { testConfig } from '../../helpers/env';
import { buildOrg } from '../../helpers/factories';
import { useTestDatabase } from '../../helpers/mongo';
import { v1As } from '../../helpers/v1';

useTestDatabase();
const t = useTestApp();

/** A valid body per id route, so that the request reaches the ownership check. */
const bodies: Record<string, object | undefined> = {
  'PATCH /agents/:id': { name: 'Taken over' },
  'DELETE /agents/:id': undefined,
  'PATCH /agents/:id/install-state': { state: 'uninstalled' },
  'POST /workspaces/:id/select': undefined,
  'GET /chats/:id/messages': undefined,
  'POST /chats/:id/messages': { message: 'hello' },
  'POST /chats/:id/fork': { message_id: 'msg_taken_over' },
  'GET /chats/:id/events': undefined,
  'PATCH /chats/:id/options': { title: 'Taken over' },
  'DELETE /chats/:id': undefined,
  'GET /jobs/:id': undefined,
  'GET /jobs/:id/events': undefined,
  'GET /jobs/:id/lineage': undefined,
  'GET /jobs/:id/transcript-events': undefined,
  'GET /jobs/:id/steps': undefined,
  'POST /jobs/:id/rerun': { iteration: 1, step: 1 },
  'POST /jobs/:id/approve': {},
  'POST /jobs/:id/cancel': {},
  'POST /jobs/:id/resume': { input: 'x' },
  'POST /jobs/:id/iterate': { feedback: 'x' },
  'POST /jobs/:id/decision': { action: 'choose', payload: {} },
  'GET /missions/:id': undefined,
  'PATCH /missions/:id': { title: 'Taken over' },
  'POST /missions/:id/backfill': { start: '2026-01-01T00:00:00Z', end: '2026-01-01T01:00:00Z' },
  'POST /missions/:id/tasks': { title: 'Taken over' },
  'PATCH /missions/:id/tasks/:taskId': { title: 'Taken over' },
  'POST /missions/:id/tasks/:taskId/start-work': undefined,
  'POST /spaces/:spaceId/init': { type: 'empty' },
  'POST /spaces/:spaceId/environment': { environmentVariables: { A: 'b' } },
  'GET /spaces/:spaceId/environment': undefined,
  'GET /usage/organization/:orgId': undefined,
  'GET /workspaces/:id/files': undefined,
  'GET /workspaces/:id/files/content': undefined,
  'PUT /workspaces/:id/files/content': { some: 'bytes' },
  'DELETE /workspaces/:id/files': undefined,
  'POST /workspaces/:id/files/directory': { path: 'dir' },
  'POST /workspaces/:id/files/move': { from: 'a.txt', to: 'b.txt' },
  'POST /workspaces/:id/files/preview': { path: 'a.txt' },
  'POST /workspaces/:id/files/share': { path: 'a.txt' },
  'DELETE /workspaces/:id/shares/:shareId': undefined,
  'POST /workspaces/:id/apps': { name: 'App', path: 'site' },
  'POST /messaging-integration/deliveries/:eventId/redeliver': undefined,
  'POST /workspaces/:id/data-blocks/query': { sql: 'SELECT 1' },
  'POST /workspaces/:id/repos': { url: 'https://example.com/x.git' },
  'POST /workspaces/:id/repos/clone': { repo_id: 'repo_x' },
  'GET /workspaces/:id/repos': undefined,
  'GET /workspaces/:id/repos/:repoId': undefined,
  'GET /workspaces/:id/repos/:repoId/events': undefined,
  'DELETE /oauth-clients/:id': undefined,
  'GET /budgets/:id': undefined,
  'PATCH /budgets/:id': { limit: 5 },
  'DELETE /budgets/:id': undefined,
  'GET /usage/executions/:id': undefined,
};

/** A valid query per id route that needs one. */
const queries: Record<string, string> = {
  'GET /workspaces/:id/files/content': '?path=a.txt',
  'PUT /workspaces/:id/files/content': '?path=a.txt',
  'DELETE /workspaces/:id/files': '?path=a.txt',
};

// Routes that take a resource id (public routes hold no organization's resources).
const idRoutes = currentRoutes({ config: testConfig() } as unknown as AppDeps, noContract).filter(
  (r) => r.path.includes(':') && r.auth !== 'public'
);

it('every id route has a case here', () => {
  expect(idRoutes.map((r) => `${r.method.toUpperCase()} ${r.path}`).sort()).toEqual(Object.keys(bodies).sort());
});

it('another organization’s ids are 404 on every id route', async () => {
  const owner = await buildOrg();
  const intruder = await buildOrg();
  const agent = (await v1As(t, owner.apiToken).post('/agents', { name: 'A', systemPrompt: 'x' })).body.id;
  const publicAgent = (
    await v1As(t, owner.apiToken).post('/agents', { name: 'P', systemPrompt: 'x', visibility: 'public' })
  ).body.id;
  const library = libraryAgentId(owner.organizationId, AGENT_LIBRARY[0].slug);
  await currentAs(t, owner.serviceToken).patch(`/agents/${library}/install-state`, { state: 'installed' });
  const space = (await v1As(t, owner.apiToken).post('/spaces', { name: 'S' })).body.space.id;
  const chat = (await currentAs(t, owner.serviceToken).post('/chats', { agent_id: agent, workspace_id: space })).body
    .chat.id;
  // A job (queued: no worker serves this file's task queue, which is all the routes need).
  const job = (
    await currentAs(t, owner.serviceToken).post('/jobs', { agent_id: agent, workspace_id: space, goal: 'g' })
  ).body.job.id;
  // A mission with a task.
  const mission = (
    await currentAs(t, owner.serviceToken).post('/missions', { title: 'M', goal: 'g', agentType: agent })
  ).body.mission.id;
  const task = (await currentAs(t, owner.serviceToken).post(`/missions/${mission}/tasks`, { title: 'T' })).body.task.id;
  // The owner's workspace holds the file and the share the requests name, so only the tenancy check refuses them.
  await t.request
    .put(`/api/workspaces/${space}/files/content?path=a.txt`)
    .set('Authorization', `Bearer ${owner.serviceToken}`)
    .send('a');
  const share = (await currentAs(t, owner.serviceToken).post(`/workspaces/${space}/files/share`, { path: 'a.txt' }))
    .body.share.id;
  // The owner's event; the intruder has a destination of its own, so only the tenancy check refuses the redelivery.
  const event = (await recordEvent({ type: 'task.created', organizationId: owner.organizationId, data: {} })).event.id;
  await t.request
    .put('/api/messaging-integration')
    .set('Authorization', `Bearer ${intruder.serviceToken}`)
    .send({ url: 'https://hooks.example.com/x' });
  const repo = (
    await currentAs(t, owner.serviceToken).post(`/workspaces/${space}/repos`, { url: 'https://example.com/x.git' })
  ).body.repo.id;
  // The owner's OAuth client (a machine client registered with its service token).
  const registered = await t.request
    .post('/oauth/register')
    .set('Authorization', `Bearer ${owner.serviceToken}`)
    .send({ client_name: 'owner machine', grant_types: ['client_credentials'] });
  expect(registered.status).toBe(201);
  const oauthClient: string = registered.body.client_id;
  const budget = (
    await currentAs(t, owner.serviceToken).post('/budgets', {
      scope: 'organization',
      period: 'day',
      unit: 'tokens',
      limit: 1,
    })
  ).body.budget.id as string;
  // An execution record of the owner (its ledger route; no worker runs here).
  const execution = `exec-1-${owner.organizationId}`;
  await Execution.collection.insertOne({
    _id: execution as never,
    organizationId: owner.organizationId,
    rootExecutionId: execution,
  });
  const ids: Record<string, string[]> = {
    id: [agent, publicAgent, library],
    eventId: [event],
    spaceId: [space],
    orgId: [owner.organizationId],
  };
  const seen: string[] = [];
  for (const route of idRoutes) {
    const key = `${route.method.toUpperCase()} ${route.path}`;
    const param = /:([A-Za-z]+)/.exec(route.path)![1];
    const values = route.path.startsWith('/workspaces')
      ? [space]
      : route.path.startsWith('/chats')
        ? [chat]
        : route.path.startsWith('/jobs')
          ? [job]
          : route.path.startsWith('/missions')
            ? [mission]
            : route.path.startsWith('/oauth-clients')
              ? [oauthClient]
              : route.path.startsWith('/budgets')
                ? [budget]
                : route.path.startsWith('/usage/executions')
                  ? [execution]
                  : ids[param];
    for (const value of values) {
      const path = `/api${route.path.replace(`:${param}`, value).replace(':shareId', share).replace(':taskId', task).replace(':repoId', repo)}${queries[key] ?? ''}`;
      const req = t.request[route.method](path).set('Authorization', `Bearer ${intruder.serviceToken}`);
      const res = await (bodies[key] ? req.send(bodies[key]) : req);
      seen.push(`${key} ${value}: ${res.status} ${res.body.error?.code}`);
      expect(`${key} ${value}: ${res.status} ${res.body.error?.code}`).toBe(`${key} ${value}: 404 not_found`);
    }
  }
  expect(seen.length).toBeGreaterThanOrEqual(idRoutes.length);
  // The intruder's DELETE and PATCH changed nothing.
  const still = await currentAs(t, owner.serviceToken).get(`/chats/${chat}/messages`);
  expect([still.status, still.body.chat?.title]).toEqual([200, 'A']);
  expect((await currentAs(t, owner.serviceToken).get(`/jobs/${job}`)).body.job.status).toBe('queued');
  expect((await currentAs(t, owner.serviceToken).get(`/missions/${mission}`)).body.mission.title).toBe('M');
  const clients = (await currentAs(t, owner.serviceToken).get('/oauth-clients')).body.clients as { id: string }[];
  expect(clients.map((c) => c.id)).toContain(oauthClient);
});
