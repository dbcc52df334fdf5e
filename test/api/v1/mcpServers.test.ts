/**
 * /api/v1/mcp-servers over real HTTP, with a real MCP server on loopback (the official SDK's server, streamable
 * HTTP over TLS): register, list, read, update, delete; headers sealed at rest and never shown; the destination
 * check; the tool listing through the official client with reachability; agents' `mcpServerIds` /
 * `mcp_server_ids` checked; another organization gets 404 everywhere.
 */
import { AgentMcpTools } from '../../../commands/agentMcpTools';
import { mcpServersForAgent } from '../../../commands/mcpServers';
import { McpServer } from '../../../models';
import { currentAs } from '../../helpers/current';
import { buildMember, buildOrg } from '../../helpers/factories';
import { startMcpTestServer, type McpTestServer } from '../../helpers/mcpServer';
import { useTestDatabase } from '../../helpers/mongo';
import { createTestApp, useTestApp } from '../../helpers/app';
import { v1As, v1Error } from '../../helpers/v1';

useTestDatabase();
let mcp: McpTestServer;
beforeAll(async () => {
  mcp = await startMcpTestServer();
});
const t = useTestApp(() => ({ WEBHOOK_ALLOW_PRIVATE: 'true', MCP_CA_FILE: mcp.certFile, MCP_TOOL_TIMEOUT_MS: '3000' }));
afterAll(async () => mcp?.close());

const SECRET = 'Bearer s3cret-token-value';

describe('/api/v1/mcp-servers', () => {
  it('registers a server with sealed headers, shows only their names, and lists its tools through MCP', async () => {
    const org = await buildOrg();
    const api = v1As(t, org.apiToken);
    const created = await api.post('/mcp-servers', {
      name: 'calc',
      url: mcp.url,
      headers: { Authorization: SECRET, 'X-Team': 'blue' },
      allowedTools: ['add'],
    });
    expect(created.status).toBe(200);
    const server = created.body.mcpServer;
    expect(server).toMatchObject({
      name: 'calc',
      url: mcp.url,
      headerNames: ['Authorization', 'X-Team'],
      allowedTools: ['add'],
      organizationId: org.organizationId,
      createdBy: org.userId,
    });
    expect(server.id).toMatch(/^mcp_/);
    // Never in clear: not in any answer, not in the database.
    const read = await api.get(`/mcp-servers/${server.id}`);
    const list = await api.get('/mcp-servers');
    for (const body of [created.text, read.text, list.text]) expect(body).not.toContain('s3cret');
    expect(list.body.mcpServers.map((s: { id: string }) => s.id)).toEqual([server.id]);
    const stored = await McpServer.findById(server.id).lean();
    expect(JSON.stringify(stored)).not.toContain('s3cret');
    expect(stored!.sealedHeaders).toMatch(/^v1\./);

    // The tool listing goes through the MCP client, with the sealed header sent.
    const tools = await api.get(`/mcp-servers/${server.id}/tools`);
    expect(tools.status).toBe(200);
    expect(tools.body).toMatchObject({ success: true, reachable: true, error: null });
    expect(tools.body.tools.map((x: { name: string; allowed: boolean; modelToolName: string }) => x)).toEqual([
      expect.objectContaining({
        name: 'add',
        allowed: true,
        modelToolName: 'calc__add',
        description: 'Adds two numbers',
      }),
      expect.objectContaining({ name: 'shout', allowed: false, modelToolName: 'calc__shout' }),
    ]);
    expect(tools.text).not.toContain('s3cret');
  });

  it('refuses bad names, URLs and headers in the v1 shape; a taken name is 409', async () => {
    const org = await buildOrg();
    const api = v1As(t, org.apiToken);
    const bad = async (body: object, message: string | RegExp): Promise<void> => {
      const res = await api.post('/mcp-servers', body);
      expect(res.status).toBe(400);
      expect(res.body).toMatchObject({ error: true, statusCode: 400, statusMessage: 'Bad Request' });
      expect(res.body.message).toMatch(message);
    };
    await bad({ name: 'Calc Tools', url: mcp.url }, /kebab-case/);
    await bad({ name: 'calc', url: 'http://example.com/mcp' }, /Invalid url: The destination must use https/);
    await bad({ name: 'calc', url: 'ftp://example.com/mcp' }, /http or https URL/);
    await bad({ name: 'calc', url: mcp.url, headers: { Host: 'x' } }, /Invalid headers: Host is set by the service/);
    await bad({ name: 'calc', url: mcp.url, headers: { 'Bad Name': 'x' } }, /not a header name/);
    await bad({ name: 'calc', url: mcp.url, headers: { A: 'one\r\ntwo' } }, /one line/);
    await bad({ name: 'calc', url: mcp.url, extra: 1 }, /./);
    expect((await api.post('/mcp-servers', { name: 'calc', url: mcp.url })).status).toBe(200);
    const again = await api.post('/mcp-servers', { name: 'calc', url: mcp.url });
    expect(again.status).toBe(409);
    expect(again.body).toEqual(v1Error(409, 'Conflict', 'An MCP server named calc already exists in the organization'));
  });

  it('a loopback URL is refused without WEBHOOK_ALLOW_PRIVATE', async () => {
    const strict = createTestApp({});
    try {
      const org = await buildOrg();
      const res = await v1As(strict, org.apiToken).post('/mcp-servers', { name: 'calc', url: mcp.url });
      expect(res.status).toBe(400);
      expect(res.body.message).toMatch(/^Invalid url: The destination address is not public \(loopback\)/);
    } finally {
      await strict.close();
    }
  });

  it('updates fields and replaces headers; a server that is down reports why, not a 500', async () => {
    const org = await buildOrg();
    const api = v1As(t, org.apiToken);
    const { body } = await api.post('/mcp-servers', { name: 'calc', url: mcp.url, headers: { Authorization: SECRET } });
    const id = body.mcpServer.id;
    const patched = await api.patch(`/mcp-servers/${id}`, {
      description: 'Numbers',
      headers: null,
      allowedTools: null,
    });
    expect(patched.status).toBe(200);
    expect(patched.body.mcpServer).toMatchObject({ description: 'Numbers', headerNames: [], allowedTools: null });
    expect((await McpServer.findById(id).lean())!.sealedHeaders).toBeNull();

    // A port nobody listens on: reachable false with the reason.
    const down = mcp.url.replace(/:\d+\//, ':9/');
    expect((await api.patch(`/mcp-servers/${id}`, { url: down })).status).toBe(200);
    const tools = await api.get(`/mcp-servers/${id}/tools`);
    expect(tools.status).toBe(200);
    expect(tools.body).toMatchObject({
      success: true,
      reachable: false,
      tools: [],
      error: { reason: 'unreachable', message: expect.stringMatching(/ECONNREFUSED/) },
    });
  });

  it('another organization gets 404 on every route; a member cannot change another member’s server', async () => {
    const org = await buildOrg();
    const other = await buildOrg();
    const { body } = await v1As(t, org.apiToken).post('/mcp-servers', { name: 'calc', url: mcp.url });
    const id = body.mcpServer.id;
    const them = v1As(t, other.apiToken);
    const notFound = v1Error(404, 'Not Found', 'MCP server not found');
    for (const res of [
      await them.get(`/mcp-servers/${id}`),
      await them.patch(`/mcp-servers/${id}`, { description: 'x' }),
      await them.get(`/mcp-servers/${id}/tools`),
      await them.del(`/mcp-servers/${id}`),
    ])
      expect([res.status, res.body]).toEqual([404, notFound]);
    expect((await them.get('/mcp-servers')).body.mcpServers).toEqual([]);
    // Another organization's server cannot be attached to an agent.
    const agent = await them.post('/agents', { name: 'A', systemPrompt: 'p', mcpServerIds: [id] });
    expect(agent.status).toBe(400);
    expect(agent.body.message).toBe(`Invalid mcpServerIds: MCP server ${id} not found`);

    const member = await buildMember(org.organizationId);
    const asMember = v1As(t, member.apiToken);
    expect((await asMember.get(`/mcp-servers/${id}`)).status).toBe(200);
    expect((await asMember.patch(`/mcp-servers/${id}`, { description: 'x' })).status).toBe(403);
    expect((await asMember.del(`/mcp-servers/${id}`)).status).toBe(403);
  });

  it('agents take mcpServerIds (v1) and mcp_server_ids (current); deleting a server detaches it', async () => {
    const org = await buildOrg();
    const api = v1As(t, org.apiToken);
    const { body } = await api.post('/mcp-servers', { name: 'calc', url: mcp.url });
    const id = body.mcpServer.id;
    const created = await api.post('/agents', { name: 'A', systemPrompt: 'p', mcpServerIds: [id] });
    expect(created.status).toBe(200);
    expect((await api.get(`/agents/${created.body.id}`)).body.agent.mcpServerIds).toEqual([id]);
    const unknown = await api.patch(`/agents/${created.body.id}`, { mcpServerIds: ['mcp_nope'] });
    expect(unknown.status).toBe(400);
    expect(unknown.body.message).toBe('Invalid mcpServerIds: MCP server mcp_nope not found');

    const current = currentAs(t, org.serviceToken);
    const made = await current.post('/agents', { name: 'B', system_prompt: 'p', mcp_server_ids: [id] });
    expect(made.status).toBe(201);
    expect(made.body.agent.mcp_server_ids).toEqual([id]);
    const refused = await current.patch(`/agents/${made.body.agent.id}`, { mcp_server_ids: ['mcp_nope'] });
    expect(refused.status).toBe(400);
    expect(refused.body.error.message).toBe('Invalid mcp_server_ids: MCP server mcp_nope not found');

    expect((await api.del(`/mcp-servers/${id}`)).body).toEqual({
      success: true,
      message: 'MCP server deleted successfully',
    });
    expect((await api.get(`/mcp-servers/${id}`)).status).toBe(404);
    expect((await api.get(`/agents/${created.body.id}`)).body.agent.mcpServerIds).toEqual([]);
  });

  it('skills’ requiredMCPs give their agents the servers of those names in the agent’s organization only', async () => {
    const org = await buildOrg();
    const other = await buildOrg();
    const mine = (await v1As(t, org.apiToken).post('/mcp-servers', { name: 'calc', url: mcp.url })).body.mcpServer;
    const theirs = (await v1As(t, other.apiToken).post('/mcp-servers', { name: 'docs', url: mcp.url })).body.mcpServer;
    const agent = { organizationId: org.organizationId, mcpServerIds: [theirs.id] };
    const skills = [{ requiredMCPs: ['calc', 'docs', 'missing'] }];
    expect((await mcpServersForAgent(agent, skills)).map((d) => d._id)).toEqual([mine.id]);
    // Their tools are listed through the MCP client and offered under `<server>__<tool>`.
    const tools = await AgentMcpTools.load(t.config, agent, skills);
    expect(tools.offered.map((x) => x.name)).toEqual(['calc__add', 'calc__shout']);
    expect(tools.handles('docs__add')).toBe(false);
  });
});
