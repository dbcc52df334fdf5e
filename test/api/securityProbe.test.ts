/**
 * The findings of the probe of issue 38, each reproduced by the probe's own request over real HTTP against the real
 * app (and database): a skill's history once it is published, anonymous registrations locking out the
 * authenticated ones, deeply nested JSON, invalid UTF-8, 405 for a path that exists, the MCP tools' scopes, and one
 * message for every refused destination. Data queries (point 6) and sub-agents (point 7) have their own files.
 */
import { refusedHostMessage } from '../../lib/safeDestination';
import { Agent, Space } from '../../models';
import { useServedTestApp } from '../helpers/app';
import { currentAs } from '../helpers/current';
import { capturingLogger } from '../helpers/env';
import { bearer, buildOrg, buildServiceToken } from '../helpers/factories';
import { connectMachine, connectWithToken, registerClient, registerMachineClient, TEST_REDIRECT } from '../helpers/mcp';
import { useTestDatabase } from '../helpers/mongo';
import { v1As, v1Error } from '../helpers/v1';

useTestDatabase();
const { logger, lines } = capturingLogger('api', 'warn');
const app = useServedTestApp({ OAUTH_REGISTRATIONS_PER_HOUR: '3' }, { logger, appUrl: true });
/** The same service behind a reverse proxy at 127.0.0.1 (TRUST_PROXY). */
const proxied = useServedTestApp({ OAUTH_REGISTRATIONS_PER_HOUR: '3', TRUST_PROXY: '127.0.0.1' });

/** Sends bytes as they are. */
function send(base: string, method: string, path: string, body: Buffer | string, headers: Record<string, string> = {}) {
  return fetch(`${base}${path}`, { method, headers: { 'content-type': 'application/json', ...headers }, body });
}

type Json = Record<string, unknown>;

it('point 1: a skill published after private versions shows other organizations only the versions written public', async () => {
  const owner = await buildOrg();
  const stranger = await buildOrg();
  const mine = v1As(app.t, owner.apiToken);
  const theirs = v1As(app.t, stranger.apiToken);
  const created = await mine.post('/skills', {
    name: 'release-notes',
    prompt: 'Use the staging key sk-SECRET-123 when you test.',
    visibility: 'organization',
  });
  expect(created.status).toBe(200);
  const id = created.body.skill.id as string;
  const published = await mine.patch(`/skills/${id}`, { visibility: 'public', prompt: 'Write release notes.' });
  expect(published.body.skill).toMatchObject({ version: 2, visibility: 'public' });

  // The probe's request: another organization asks for version 1.
  const v1 = await theirs.get(`/skills/${id}/versions/1`);
  expect(v1.status).toBe(404);
  expect(v1.body).toEqual(v1Error(404, 'Not Found', 'Skill version not found'));
  expect(v1.text).not.toContain('SECRET');
  const list = await theirs.get(`/skills/${id}/versions`);
  expect(list.status).toBe(200);
  expect(list.body.versions.map((v: Json) => v.version)).toEqual([2]);
  expect(list.text).not.toContain('SECRET');
  const v2 = await theirs.get(`/skills/${id}/versions/2`);
  expect([v2.status, v2.body.version.prompt]).toEqual([200, 'Write release notes.']);
  // At home, the whole history stays.
  expect((await mine.get(`/skills/${id}/versions`)).body.versions.map((v: Json) => v.version)).toEqual([2, 1]);
  expect((await mine.get(`/skills/${id}/versions/1`)).body.version.prompt).toContain('SECRET');
});

it('point 2: anonymous registrations spend their own budget, never an organization’s; X-Forwarded-For only from TRUST_PROXY', async () => {
  const org = await buildOrg();
  const mcpToken = await buildServiceToken(org, ['mcp']);
  const anonymous = (base: string, headers: Record<string, string> = {}) =>
    registerClient(base, { redirect_uris: [TEST_REDIRECT], token_endpoint_auth_method: 'none' }, headers);
  const machine = (token: string) =>
    registerClient(
      app.base,
      { client_name: 'probe', grant_types: ['client_credentials'] },
      { authorization: bearer(token) }
    );

  // The probe: anonymous callers spend the address's registrations (a forged X-Forwarded-For changes nothing).
  for (let i = 0; i < 3; i++) expect((await anonymous(app.base)).status).toBe(201);
  const locked = await anonymous(app.base, { 'x-forwarded-for': `198.51.100.${String(Math.random()).slice(2, 4)}` });
  expect(locked.status).toBe(429);
  expect(locked.headers.get('retry-after')).toMatch(/^\d+$/);
  // The next registration with a valid mcp token is its organization's: accepted.
  expect((await machine(mcpToken)).status).toBe(201);
  // An organization's own budget: its 4th registration in the hour is refused, another organization's is not.
  for (let i = 0; i < 2; i++) expect((await machine(mcpToken)).status).toBe(201);
  expect((await machine(mcpToken)).status).toBe(429);
  const other = await buildOrg();
  expect((await machine(await buildServiceToken(other, ['mcp']))).status).toBe(201);

  // Behind a trusted proxy, each client address has its own budget.
  const client = (n: number) => ({ 'x-forwarded-for': `203.0.113.${n}` });
  for (let i = 0; i < 3; i++) expect((await anonymous(proxied.base, client(7))).status).toBe(201);
  expect((await anonymous(proxied.base, client(7))).status).toBe(429);
  expect((await anonymous(proxied.base, client(8))).status).toBe(201);
  // A client that prepends its own X-Forwarded-For is still known by the address the proxy appended.
  expect((await anonymous(proxied.base, { 'x-forwarded-for': '203.0.113.9, 203.0.113.7' })).status).toBe(429);
});

it('point 3: a body nested 4,000 deep is 400 in each surface’s shape, with no stack trace logged', async () => {
  const org = await buildOrg();
  const deep = `${'{"a":'.repeat(4000)}1${'}'.repeat(4000)}`;
  const errorsBefore = lines.filter((l) => (l.level as number) >= 50).length;

  const v1 = await send(app.base, 'POST', '/api/v1/agents', deep, { authorization: bearer(org.apiToken) });
  expect(v1.status).toBe(400);
  expect(await v1.json()).toEqual(
    v1Error(400, 'Bad Request', 'Invalid JSON in request body: nested deeper than 64 levels')
  );
  const current = await send(app.base, 'POST', '/api/agents', deep, { authorization: bearer(org.serviceToken) });
  expect(current.status).toBe(400);
  expect(await current.json()).toEqual({
    error: { code: 'invalid_json', message: 'Invalid JSON in request body: nested deeper than 64 levels' },
  });
  for (const path of ['/oauth/register', '/mcp']) {
    const res = await send(app.base, 'POST', path, deep, {
      accept: 'application/json, text/event-stream',
      authorization: bearer(org.serviceToken),
    });
    expect({ path, status: res.status }).toEqual({ path, status: 400 });
    expect(await res.json()).toEqual({
      error: 'invalid_request',
      error_description: 'Invalid JSON in request body: nested deeper than 64 levels',
    });
  }
  // Arrays too; 64 levels are accepted (and checked by the route's schema as usual).
  const arrays = await send(app.base, 'POST', '/api/agents', `${'['.repeat(5000)}${']'.repeat(5000)}`, {
    authorization: bearer(org.serviceToken),
  });
  expect(arrays.status).toBe(400);
  const at64 = `{"name":"n","system_prompt":"p","x":${'['.repeat(63)}${']'.repeat(63)}}`;
  const fine = await send(app.base, 'POST', '/api/agents', at64, { authorization: bearer(org.serviceToken) });
  expect(await fine.json()).toEqual({ error: { code: 'validation_failed', message: expect.stringMatching(/x/) } });
  expect(lines.filter((l) => (l.level as number) >= 50).length).toBe(errorsBefore);
});

it('point 4: a body that is not UTF-8 is 400 Invalid JSON on both surfaces, and nothing is stored', async () => {
  const org = await buildOrg();
  const bad = Buffer.concat([Buffer.from('{"name":"bad'), Buffer.from([0xff, 0xfe]), Buffer.from('"}')]);
  const before = await Promise.all([Space.countDocuments(), Agent.countDocuments()]);
  const current = await send(app.base, 'POST', '/api/workspaces', bad, { authorization: bearer(org.serviceToken) });
  expect(current.status).toBe(400);
  expect(await current.json()).toEqual({ error: { code: 'invalid_json', message: 'Invalid JSON in request body' } });
  const agent = Buffer.concat([
    Buffer.from('{"systemPrompt":"p","name":"bad'),
    Buffer.from([0xc3, 0x28]), // a lead byte followed by no continuation
    Buffer.from('"}'),
  ]);
  const v1 = await send(app.base, 'POST', '/api/v1/agents', agent, { authorization: bearer(org.apiToken) });
  expect(v1.status).toBe(400);
  expect(await v1.json()).toEqual(v1Error(400, 'Bad Request', 'Invalid JSON in request body'));
  expect(await Promise.all([Space.countDocuments(), Agent.countDocuments()])).toEqual(before);
  // Well-formed UTF-8 (a byte order mark first) is read as it was written.
  const name = 'café ✓ 😀';
  const ok = await send(
    app.base,
    'POST',
    '/api/workspaces',
    Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(JSON.stringify({ name }))]),
    { authorization: bearer(org.serviceToken) }
  );
  expect(ok.status).toBe(201);
  expect(((await ok.json()) as { workspace: Json }).workspace.name).toBe(name);
});

it('point 5: a path that exists with other methods is 405 with Allow, in each surface’s shape; unknown paths 404', async () => {
  const org = await buildOrg();
  const allowOf = (res: Response) => new Set(res.headers.get('allow')!.split(', '));
  const current = await fetch(`${app.base}/api/agents`, {
    method: 'PUT',
    headers: { authorization: bearer(org.serviceToken) },
  });
  expect(current.status).toBe(405);
  expect(allowOf(current)).toEqual(new Set(['GET', 'HEAD', 'POST']));
  expect(await current.json()).toEqual({ error: { code: 'method_not_allowed', message: 'Method not allowed' } });
  expect(current.headers.get('x-request-id')).toBeTruthy();

  const v1 = await fetch(`${app.base}/api/v1/agents`, {
    method: 'DELETE',
    headers: { authorization: bearer(org.apiToken) },
  });
  expect(v1.status).toBe(405);
  expect(allowOf(v1)).toEqual(new Set(['GET', 'HEAD', 'POST']));
  expect(await v1.json()).toEqual(v1Error(405, 'Method Not Allowed', 'Method not allowed'));
  const one = await fetch(`${app.base}/api/v1/agents/agt_x`, { method: 'PUT' });
  expect([one.status, allowOf(one).has('PATCH'), allowOf(one).has('DELETE')]).toEqual([405, true, true]);

  expect((await fetch(`${app.base}/api/nope`, { method: 'PUT' })).status).toBe(404);
  expect((await fetch(`${app.base}/api/v1/nope`, { method: 'DELETE' })).status).toBe(404);
  // An existing method still answers as before.
  expect((await fetch(`${app.base}/api/agents`, { headers: { authorization: bearer(org.serviceToken) } })).status).toBe(
    200
  );
});

it('point 7: each MCP tool needs the scope of its REST route, for service tokens and OAuth clients alike', async () => {
  const org = await buildOrg();
  const agentId = (await currentAs(app.t, org.serviceToken).post('/agents', { name: 'A', system_prompt: 'p' })).body
    .agent.id as string;
  type Result = Awaited<ReturnType<Awaited<ReturnType<typeof connectWithToken>>['callTool']>>;
  const refusal = (r: Result) => (r.isError ? (r.structuredContent as { error: Json }).error : null);

  // mcp alone: the endpoint answers, but no tool runs (through REST, the same token reads no agent either).
  const bare = await buildServiceToken(org, ['mcp']);
  const onlyMcp = await connectWithToken(app.base, bare);
  expect(refusal(await onlyMcp.callTool({ name: 'list_agents', arguments: {} }))).toEqual({
    code: 'forbidden',
    message: 'The token lacks the scope agents:read',
  });
  expect(
    refusal(await onlyMcp.callTool({ name: 'execute_agent', arguments: { agent_id: agentId, message: 'hi' } }))
  ).toEqual({ code: 'forbidden', message: 'The token lacks the scope chats:write' });
  for (const [name, args, scope] of [
    ['approve_job', { job_id: 'job_x' }, 'jobs:write'],
    ['create_mission', { title: 't', goal: 'g', agentType: 'x', schedule: { type: 'manual' } }, 'missions:write'],
    ['list_tasks', {}, 'missions:read'],
  ] as const)
    expect(refusal(await onlyMcp.callTool({ name, arguments: args }))).toEqual({
      code: 'forbidden',
      message: `The token lacks the scope ${scope}`,
    });
  expect((await onlyMcp.listResources()).resources).toEqual([]);
  await onlyMcp.close();
  expect((await currentAs(app.t, bare).get('/agents')).status).toBe(403);

  // mcp + agents:read: reads agents through both, runs nothing through either.
  const reader = await buildServiceToken(org, ['mcp', 'agents:read']);
  const viaToken = await connectWithToken(app.base, reader);
  const listed = await viaToken.callTool({ name: 'list_agents', arguments: {} });
  expect(refusal(listed)).toBeNull();
  expect((listed.structuredContent as { agents: Json[] }).agents.map((a) => a.id)).toEqual([agentId]);
  expect(refusal(await viaToken.callTool({ name: 'create_chat', arguments: { agent_id: agentId } }))).toMatchObject({
    code: 'forbidden',
  });
  await viaToken.close();
  expect((await currentAs(app.t, reader).get('/agents')).status).toBe(200);
  expect((await currentAs(app.t, reader).post('/chats', { agent_id: agentId })).status).toBe(403);

  // An OAuth client acts with the rights of the service token it came from.
  const viaOAuth = await connectMachine(app.base, await registerMachineClient(app.base, reader));
  expect(refusal(await viaOAuth.callTool({ name: 'get_agent', arguments: { agent_id: agentId } }))).toBeNull();
  expect(refusal(await viaOAuth.callTool({ name: 'list_jobs', arguments: {} }))).toEqual({
    code: 'forbidden',
    message: 'The token lacks the scope jobs:read',
  });
  await viaOAuth.close();
});

it('point 7: every refused destination host gets one message, whatever the reason; the reason goes to the log', async () => {
  const org = await buildOrg();
  const api = v1As(app.t, org.apiToken);
  const seen: Json[] = [];
  for (const [host, reason] of [
    ['localhost', 'resolves to an address that is not public (loopback)'],
    ['does-not-exist.invalid', 'does not resolve (ENOTFOUND)'],
  ]) {
    const created = await api.post('/mcp-servers', { name: `probe-${seen.length}`, url: `https://${host}:9/mcp` });
    expect(created.status).toBe(200);
    const tools = await api.get(`/mcp-servers/${created.body.mcpServer.id}/tools`);
    expect(tools.status).toBe(200);
    expect(tools.body.error).toEqual({ reason: 'unsafe_destination', message: refusedHostMessage(host) });
    seen.push(tools.body.error);
    expect(lines.some((l) => l.detail === `${host} ${reason}`)).toBe(true);
  }
  // The two answers differ by the host name the client sent, and nothing else.
  expect(String(seen[0].message).replace('localhost', 'H')).toBe(
    String(seen[1].message).replace('does-not-exist.invalid', 'H')
  );
});
