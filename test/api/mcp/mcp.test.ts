/**
 * The MCP endpoint end to end with the official SDK's real client over HTTP: discovery from the 401 (RFC 9728 →
 * RFC 8414), a token by client credentials (a machine client registered with a service token) and by
 * authorization code + PKCE (a person consenting with a service token), tools listed and called against the real
 * engine (Temporal, worker, the fake Anthropic server), progress notifications, organization scoping, scopes,
 * session handling (Mcp-Session-Id, protocol version, DELETE), the Origin check, and resuming a broken stream with
 * Last-Event-ID on another api instance.
 */
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { LATEST_PROTOCOL_VERSION } from '@modelcontextprotocol/sdk/types.js';
import { appendEvents, insertEvents } from '../../../commands/eventLog';
import { mcpStreamId } from '../../../models';
import { useServedTestApp } from '../../helpers/app';
import { currentAs } from '../../helpers/current';
import { bearer, buildOrg, buildServiceToken } from '../../helpers/factories';
import {
  connectMachine,
  connectPerson,
  connectWithToken,
  PkceProvider,
  registerMachineClient,
} from '../../helpers/mcp';
import { useTestDatabase } from '../../helpers/mongo';
import { openSse } from '../../helpers/sse';
import { closeAfterAll } from '../../helpers/teardown';
import { until } from '../../helpers/until';
import { useExecutionStack } from '../../helpers/worker';

useTestDatabase();
const stack = useExecutionStack('mcp', { DEFAULT_MODEL: 'claude-test', SSE_HEARTBEAT_MS: '300' }, { appUrl: true });
// A second api instance behind the same APP_URL (as behind a load balancer), on the same database.
const other = useServedTestApp(() => ({ ...stack.env, APP_URL: stack.base }));
const clients: Client[] = [];
closeAfterAll(async () => {
  for (const c of clients) await c.close().catch(() => undefined);
});

const keep = (c: Client): Client => {
  clients.push(c);
  return c;
};

interface Org {
  org: Awaited<ReturnType<typeof buildOrg>>;
  organizationId: string;
  serviceToken: string;
  mcpToken: string;
  agentId: string;
  workspaceId: string;
}

async function setupOrg(): Promise<Org> {
  const org = await buildOrg();
  const api = currentAs(stack.t, org.serviceToken);
  const agent = await api.post('/agents', { name: 'Helper', system_prompt: 'Be brief.' });
  expect(agent.status).toBe(201);
  const ws = await api.post('/workspaces', { name: 'MCP' });
  expect(ws.status).toBe(201);
  return {
    org,
    organizationId: org.organizationId,
    serviceToken: org.serviceToken,
    // The endpoint's scope and those of the REST routes its tools stand for (issue 38).
    mcpToken: await buildServiceToken(org, ['mcp', 'agents:write', 'chats:write', 'jobs:write', 'missions:write']),
    agentId: agent.body.agent.id,
    workspaceId: ws.body.workspace.id,
  };
}

const initialize = {
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: LATEST_PROTOCOL_VERSION, capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
};
const MCP_ACCEPT = 'application/json, text/event-stream';

function post(on: string, body: unknown, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(`${on}/mcp`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: MCP_ACCEPT, ...headers },
    body: JSON.stringify(body),
  });
}

/**
 * Opens a raw session (an initialize request, its answer's body dropped).
 * @param auth the Authorization header.
 * @returns the session's id.
 */
async function openSession(auth: Record<string, string>): Promise<string> {
  const opened = await post(stack.base, initialize, auth);
  await opened.body?.cancel();
  return opened.headers.get('mcp-session-id')!;
}

// Tool results and metadata are compared by value: their shapes are the routes' schemas, checked elsewhere.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = Record<string, any>;

/** Structured content of a tool result (a refusal fails the test with its text). */
function ok(result: Awaited<ReturnType<Client['callTool']>>): Json {
  if (result.isError) throw new Error(`tool error: ${JSON.stringify(result.content)}`);
  return result.structuredContent as Json;
}

describe('discovery and tokens', () => {
  it('answers 401 with WWW-Authenticate naming the protected-resource metadata, which leads to the authorization server', async () => {
    const res = await post(stack.base, initialize);
    expect(res.status).toBe(401);
    const challenge = res.headers.get('www-authenticate')!;
    expect(challenge).toBe(`Bearer resource_metadata="${stack.base}/.well-known/oauth-protected-resource/mcp"`);
    expect(await res.json()).toEqual({ error: 'invalid_token', error_description: 'Authorization header required' });

    const prm = (await fetch(/resource_metadata="([^"]+)"/.exec(challenge)![1]).then((r) => r.json())) as Json;
    expect(prm).toMatchObject({
      resource: `${stack.base}/mcp`,
      authorization_servers: [stack.base],
      scopes_supported: ['mcp'],
    });
    const as = await fetch(`${prm.authorization_servers[0]}/.well-known/oauth-authorization-server`).then((r) =>
      r.json()
    );
    expect(as).toMatchObject({
      issuer: stack.base,
      token_endpoint: `${stack.base}/oauth/token`,
      registration_endpoint: `${stack.base}/oauth/register`,
      grant_types_supported: ['authorization_code', 'client_credentials', 'refresh_token'],
      code_challenge_methods_supported: ['S256'],
      scopes_supported: ['mcp'],
    });
  });

  it('a machine client gets a token by client credentials, lists the tools and drives agents and chats', async () => {
    const org = await setupOrg();
    const client = keep(await connectMachine(stack.base, await registerMachineClient(stack.base, org.mcpToken)));

    const { tools } = await client.listTools();
    expect(tools.map((x) => x.name)).toEqual(
      expect.arrayContaining([
        'list_agents',
        'get_agent',
        'execute_agent',
        'create_chat',
        'send_message',
        'read_messages',
        'list_tasks',
        'list_jobs',
        'get_job',
        'approve_job',
        'iterate_job',
        'resume_job',
        'cancel_job',
        'job_events_url',
        'list_missions',
        'create_mission',
      ])
    );
    for (const tool of tools) expect(tool.inputSchema.type).toBe('object');

    const agents = ok(await client.callTool({ name: 'list_agents', arguments: {} }));
    expect(agents.agents.map((a: { id: string }) => a.id)).toContain(org.agentId);
    expect(ok(await client.callTool({ name: 'get_agent', arguments: { agent_id: org.agentId } })).agent.id).toBe(
      org.agentId
    );

    const chat = ok(
      await client.callTool({
        name: 'create_chat',
        arguments: { agent_id: org.agentId, workspace_id: org.workspaceId, title: 'Over MCP' },
      })
    ).chat;
    expect(chat).toMatchObject({ agent_id: org.agentId, workspace_id: org.workspaceId, title: 'Over MCP' });

    const progress: string[] = [];
    const sent = ok(
      await client.callTool(
        { name: 'send_message', arguments: { chat_id: chat.id, message: 'Hello over MCP', wait: true } },
        undefined,
        { onprogress: (p) => progress.push(p.message ?? '') }
      )
    );
    expect(sent.reply).toEqual({ status: 'completed', result: 'Echo: Hello over MCP', error: null });
    // The reply streamed as progress notifications, in order, nothing missing or repeated.
    expect(progress.join('')).toBe('Echo: Hello over MCP');

    const read = ok(await client.callTool({ name: 'read_messages', arguments: { chat_id: chat.id } }));
    expect(read.messages.map((m: { role: string; content: string }) => [m.role, m.content])).toEqual([
      ['user', 'Hello over MCP'],
      ['assistant', 'Echo: Hello over MCP'],
    ]);
    // The same chat through the HTTP route: one record, two doors.
    const viaHttp = await currentAs(stack.t, org.serviceToken).get(`/chats/${chat.id}/messages`);
    expect(viaHttp.body.messages).toEqual(read.messages);

    const executed = ok(
      await client.callTool({ name: 'execute_agent', arguments: { agent_id: org.agentId, message: 'Run' } })
    );
    expect(executed).toMatchObject({ status: 'completed', result: 'Echo: Run' });
    expect(executed.execution_id).toMatch(/^exec-/);

    const tasks = ok(await client.callTool({ name: 'list_tasks', arguments: {} }));
    expect(tasks).toEqual({ tasks: [], next_cursor: null });
  });

  it('a person authorizes a client by authorization code + PKCE on the consent page, then uses MCP as themself', async () => {
    const org = await setupOrg();
    const provider = new PkceProvider(org.mcpToken);
    const client = keep(await connectPerson(stack.base, provider));
    expect(provider.consentPage).toContain('test person client');
    const tokens = provider.tokens()!;
    expect(tokens.scope).toBe('mcp');
    expect(tokens.refresh_token).toMatch(/^oacr_/);
    // The access token is a JWT bound to this MCP endpoint.
    const claims = JSON.parse(Buffer.from(tokens.access_token.split('.')[1], 'base64url').toString());
    expect(claims).toMatchObject({ aud: `${stack.base}/mcp`, iss: stack.base, scope: 'mcp', org: org.organizationId });
    const agents = ok(await client.callTool({ name: 'list_agents', arguments: {} }));
    expect(agents.agents.map((a: { id: string }) => a.id)).toContain(org.agentId);
  });

  it('a person who denies gets no code; a consent with a token lacking mcp is refused on the page', async () => {
    const org = await setupOrg();
    const denied = new PkceProvider(org.mcpToken, 'deny');
    await expect(connectPerson(stack.base, denied)).rejects.toThrow(/no authorization code/);
    const weak = new PkceProvider(await buildServiceToken(org.org, ['agents:read']));
    await expect(connectPerson(stack.base, weak)).rejects.toThrow(/authorize: 401.*lacks the scope mcp/s);
    const unknown = new PkceProvider('svc_unknown');
    await expect(connectPerson(stack.base, unknown)).rejects.toThrow(/authorize: 401.*unknown, revoked or expired/s);
  });
});

describe('jobs', () => {
  it('lists, reads and approves a job through MCP; its transcript is a resource; a signed URL streams its events', async () => {
    const org = await setupOrg();
    const client = keep(await connectMachine(stack.base, await registerMachineClient(stack.base, org.mcpToken)));
    const created = await currentAs(stack.t, org.serviceToken).post('/jobs', {
      agent_id: org.agentId,
      workspace_id: org.workspaceId,
      goal: 'Write the report [[request_review]]',
    });
    expect(created.status).toBe(201);
    const jobId: string = created.body.job.id;

    await until(
      async () => ok(await client.callTool({ name: 'get_job', arguments: { job_id: jobId } })).job.status,
      (status) => status === 'awaiting_review',
      20_000,
      100,
      'the job awaiting review'
    );
    const listed = ok(await client.callTool({ name: 'list_jobs', arguments: { status: 'awaiting_review' } }));
    expect(listed.jobs.map((j: { id: string }) => j.id)).toEqual([jobId]);

    // The signed URL, issued through MCP, streams the job's events without a bearer token until it ends.
    const { url } = ok(await client.callTool({ name: 'job_events_url', arguments: { job_id: jobId } }));
    const events = await openSse(url);
    expect(events.status).toBe(200);

    // Another organization's client cannot act on it.
    const other = await setupOrg();
    const stranger = keep(await connectWithToken(stack.base, other.mcpToken));
    const refused = await stranger.callTool({ name: 'approve_job', arguments: { job_id: jobId } });
    expect(refused.isError).toBe(true);
    expect((refused.structuredContent as Json).error.code).toBe('not_found');

    const approved = ok(await client.callTool({ name: 'approve_job', arguments: { job_id: jobId } }));
    expect(approved.job).toMatchObject({ status: 'completed', review: { state: 'approved' } });
    // An action that does not fit the state: a tool error naming the current state.
    const again = await client.callTool({ name: 'cancel_job', arguments: { job_id: jobId } });
    expect(again.isError).toBe(true);
    expect((again.structuredContent as Json).error).toMatchObject({ current_state: 'completed' });

    await events.ended;
    const statuses = events.events.filter((e) => e.event === 'job.status').map((e) => JSON.parse(e.data).status);
    expect(statuses.at(-1)).toBe('completed');

    const { resources } = await client.listResources();
    expect(resources.map((r) => r.uri)).toContain(`job://${jobId}/transcript`);
    const read = await client.readResource({ uri: `job://${jobId}/transcript` });
    const transcript = JSON.parse((read.contents[0] as { text: string }).text) as Json;
    expect(transcript.job_id).toBe(jobId);
    expect(transcript.events.length).toBeGreaterThan(0);
    await expect(stranger.readResource({ uri: `job://${jobId}/transcript` })).rejects.toThrow(/not found/i);
  });
});

describe('missions', () => {
  it('creates a mission with a cron schedule and lists it; a bad cron is a tool error naming the field', async () => {
    const org = await setupOrg();
    const client = keep(await connectMachine(stack.base, await registerMachineClient(stack.base, org.mcpToken)));
    const created = ok(
      await client.callTool({
        name: 'create_mission',
        arguments: {
          title: 'Nightly digest',
          goal: 'Summarize the day',
          agentType: org.agentId,
          schedule: { type: 'cron', value: '0 2 * * *', timezone: 'Europe/Paris' },
        },
      })
    ).mission;
    expect(created).toMatchObject({ title: 'Nightly digest', status: 'active' });
    expect(created.nextRunTimes.length).toBeGreaterThan(0);
    const listed = ok(await client.callTool({ name: 'list_missions', arguments: {} }));
    expect(listed.missions.map((m: { id: string }) => m.id)).toEqual([created.id]);
    const bad = await client.callTool({
      name: 'create_mission',
      arguments: { title: 'x', goal: 'y', agentType: org.agentId, schedule: { type: 'cron', value: '61 * * * *' } },
    });
    expect(bad.isError).toBe(true);
    expect(JSON.stringify(bad.content)).toContain('schedule.value');
  });
});

describe('scopes, organizations and sessions', () => {
  it('refuses a token without the mcp scope with 403 insufficient_scope, and accepts a service token with mcp or *', async () => {
    const org = await buildOrg();
    const weak = await buildServiceToken(org, ['agents:read', 'chats:write']);
    const res = await post(stack.base, initialize, { authorization: bearer(weak) });
    expect(res.status).toBe(403);
    expect(res.headers.get('www-authenticate')).toBe(
      `Bearer error="insufficient_scope", scope="mcp", resource_metadata="${stack.base}/.well-known/oauth-protected-resource/mcp"`
    );
    expect(((await res.json()) as Json).error).toBe('insufficient_scope');
    for (const scopes of [['mcp'], ['*']]) {
      const client = keep(await connectWithToken(stack.base, await buildServiceToken(org, scopes)));
      expect((await client.listTools()).tools.length).toBeGreaterThan(5);
    }
    const v1 = await post(stack.base, initialize, { authorization: bearer(org.apiToken) });
    expect(v1.status).toBe(401);
    const forged = await post(stack.base, initialize, { authorization: bearer('eyJhbGciOiJIUzI1NiJ9.e30.x') });
    expect(forged.status).toBe(401);
    expect(forged.headers.get('www-authenticate')).toContain('error="invalid_token"');
  });

  it('refuses another organization’s agents, chats and sessions', async () => {
    const a = await setupOrg();
    const b = await setupOrg();
    const clientB = keep(await connectMachine(stack.base, await registerMachineClient(stack.base, b.mcpToken)));
    const chatA = await currentAs(stack.t, a.serviceToken).post('/chats', {
      agent_id: a.agentId,
      workspace_id: a.workspaceId,
    });
    for (const [name, args] of [
      ['get_agent', { agent_id: a.agentId }],
      ['read_messages', { chat_id: chatA.body.chat.id }],
      ['send_message', { chat_id: chatA.body.chat.id, message: 'hi' }],
      ['execute_agent', { agent_id: a.agentId, message: 'hi' }],
    ] as const) {
      const res = await clientB.callTool({ name, arguments: args });
      expect({ name, isError: res.isError }).toEqual({ name, isError: true });
      expect((res.structuredContent as { error: { code: string } }).error.code).toMatch(
        /^(not_found|validation_failed)$/
      );
    }
    const listed = ok(await clientB.callTool({ name: 'list_agents', arguments: {} }));
    expect(listed.agents.map((x: { id: string }) => x.id)).not.toContain(a.agentId);
    // A's session with B's token: unknown.
    const sessionA = await openSession({ authorization: bearer(a.mcpToken) });
    const res = await post(
      stack.base,
      { jsonrpc: '2.0', id: 2, method: 'tools/list' },
      { authorization: bearer(b.mcpToken), 'mcp-session-id': sessionA }
    );
    expect(res.status).toBe(404);
    expect(((await res.json()) as Json).error.code).toBe(-32001);
  });

  it('checks Mcp-Session-Id, the protocol version and the Origin; DELETE ends the session', async () => {
    const org = await setupOrg();
    const auth = { authorization: bearer(org.mcpToken) };
    const list = { jsonrpc: '2.0', id: 2, method: 'tools/list' };
    expect((await post(stack.base, list, auth)).status).toBe(400);
    expect((await post(stack.base, list, { ...auth, 'mcp-session-id': 'mcps_unknown' })).status).toBe(404);
    const opened = await post(stack.base, initialize, auth);
    expect(opened.status).toBe(200);
    const session = opened.headers.get('mcp-session-id')!;
    expect(session).toMatch(/^mcps_/);
    await opened.body?.cancel();
    const headers = { ...auth, 'mcp-session-id': session };
    const wrongVersion = await post(stack.base, list, { ...headers, 'mcp-protocol-version': '2024-11-05' });
    expect(wrongVersion.status).toBe(400);
    const foreign = await post(stack.base, list, { ...headers, origin: 'https://evil.example' });
    expect(foreign.status).toBe(403);
    const listed = await post(stack.base, list, { ...headers, 'mcp-protocol-version': LATEST_PROTOCOL_VERSION });
    expect(listed.status).toBe(200);
    expect(await listed.text()).toContain('"list_agents"');
    const standalone = await openSse(`${other.base}/mcp`, { headers });
    expect(standalone.status).toBe(200);
    const closed = await fetch(`${stack.base}/mcp`, { method: 'DELETE', headers });
    expect(closed.status).toBe(204);
    // The session's open stream, on the other instance, ends at its next heartbeat.
    await standalone.ended;
    expect((await post(stack.base, list, headers)).status).toBe(404);
  });

  it('a client holding the response past the head (handed over before the head raise) resumes to 204, not a repeat', async () => {
    const org = await setupOrg();
    const auth = { authorization: bearer(org.mcpToken) };
    const session = await openSession(auth);
    const headers = { ...auth, 'mcp-session-id': session, accept: 'text/event-stream' };
    // A POST's stream whose response is inserted and its head not raised yet: the moment a reader in the writing
    // process already has the response (commands/eventLog.ts).
    const stream = mcpStreamId(session, 'past');
    const response = { seq: 2, event: 'message', data: { jsonrpc: '2.0', id: 9, result: {} } };
    await appendEvents(stream, [
      { seq: 1, event: 'message', data: { jsonrpc: '2.0', method: 'notifications/progress' } },
    ]);
    await insertEvents(stream, [response]);
    const again = await fetch(`${other.base}/mcp`, { headers: { ...headers, 'last-event-id': 'past.2' } });
    expect([again.status, await again.text()]).toEqual([204, '']);
    // A client that has only the notification gets the response once, when its writer raises the head.
    const resumed = await openSse(`${other.base}/mcp`, { headers: { ...headers, 'last-event-id': 'past.1' } });
    await appendEvents(stream, [response]);
    await resumed.ended;
    expect(resumed.events.map((e) => e.id)).toEqual(['past.2']);
  });

  it('a session opened on one api instance goes on on another; a broken stream resumes there with Last-Event-ID', async () => {
    const org = await setupOrg();
    const auth = { authorization: bearer(org.mcpToken) };
    const session = await openSession(auth);
    const headers = { ...auth, 'mcp-session-id': session, 'mcp-protocol-version': LATEST_PROTOCOL_VERSION };

    // A slow reply on instance A; the client reads the first progress notifications, then its connection breaks.
    const call = {
      jsonrpc: '2.0',
      id: 7,
      method: 'tools/call',
      params: {
        name: 'execute_agent',
        arguments: { agent_id: org.agentId, message: '[chunks:20][slow:100]' },
        _meta: { progressToken: 'p1' },
      },
    };
    const first = await openSse(`${stack.base}/mcp`, {
      method: 'POST',
      headers: { ...headers, accept: MCP_ACCEPT },
      body: call,
    });
    expect(first.status).toBe(200);
    await first.waitFor(4);
    first.close();
    const seen = first.events.filter((e) => e.data !== '');
    const lastId = first.events.at(-1)!.id!;
    expect(lastId).toMatch(/^[0-9a-f-]{36}\.\d+$/);

    // Instance B replays what followed and follows the stream live until the call's response.
    const resumed = await openSse(`${other.base}/mcp`, { headers: { ...headers, 'last-event-id': lastId } });
    expect(resumed.status).toBe(200);
    await resumed.ended;
    const all = [...seen, ...resumed.events].map((e) => JSON.parse(e.data));
    const texts = all.filter((m) => m.method === 'notifications/progress').map((m) => m.params.message);
    expect(texts.join('')).toBe(Array.from({ length: 20 }, (_, i) => `tok${i + 1} `).join(''));
    const response = all.at(-1);
    expect(response.id).toBe(7);
    expect(response.result.structuredContent).toMatchObject({ status: 'completed' });
    // Event ids keep increasing across the break: nothing repeated.
    const seqs = [...first.events, ...resumed.events].map((e) => Number(e.id!.split('.')[1]));
    expect(seqs).toEqual([...seqs].sort((x, y) => x - y));
    expect(new Set(seqs).size).toBe(seqs.length);
    // Resumed once more after the call's response, the stream read to its end answers 204: nothing is sent twice.
    const again = await fetch(`${stack.base}/mcp`, {
      headers: { ...headers, accept: 'text/event-stream', 'last-event-id': resumed.events.at(-1)!.id! },
    });
    expect([again.status, await again.text()]).toEqual([204, '']);

    // Any request of the session is served by instance B too.
    const onB = keep(await connectWithToken(other.base, org.mcpToken, session));
    expect(ok(await onB.callTool({ name: 'list_agents', arguments: {} })).agents.length).toBeGreaterThan(0);
  });
});
