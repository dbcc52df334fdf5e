/**
 * The MCP endpoint across real processes: two api processes behind one APP_URL (as behind a load balancer) and a
 * worker process, the official SDK client over HTTP. A session begun on one api process goes on on the other (also
 * once the first was killed: its state is in the database, not in a process); a worker killed (SIGKILL) in the
 * middle of an `execute_agent` call changes nothing the client sees: the call answers the whole reply, and its
 * progress notifications carry every character exactly once.
 */
import { randomBytes } from 'node:crypto';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { freePort } from '../../../scripts/servers/launch';
import { startFakeAnthropic, type FakeAnthropic } from '../../../scripts/fakes/anthropic';
import { childTestEnv, TEST_ENCRYPTION_KEY } from '../../helpers/env';
import { bearer, buildOrg, buildServiceToken } from '../../helpers/factories';
import { connectMachine, connectWithToken, registerMachineClient, type MachineClient } from '../../helpers/mcp';
import { useTestDatabase } from '../../helpers/mongo';
import { spawnScript, type Spawned } from '../../helpers/processes';

const db = useTestDatabase();
let fake: FakeAnthropic;
const apis: Array<{ proc: Spawned; url: string }> = [];
const workers: Spawned[] = [];
const clients: Client[] = [];
let env: Record<string, string>;

async function startWorker(): Promise<Spawned> {
  const w = spawnScript('worker/index.ts', childTestEnv(env));
  workers.push(w);
  await w.waitFor(/worker started/, 90_000);
  return w;
}

beforeAll(async () => {
  fake = await startFakeAnthropic();
  const ports = [await freePort(), await freePort()];
  env = {
    MONGODB_URI: db.uri,
    TEMPORAL_TASK_QUEUE: `mcp-procs-${randomBytes(4).toString('hex')}`,
    ANTHROPIC_API_KEY: 'test-key',
    ANTHROPIC_BASE_URL: fake.url,
    DEFAULT_MODEL: 'claude-test',
    ENCRYPTION_KEY: TEST_ENCRYPTION_KEY,
    APP_URL: `http://127.0.0.1:${ports[0]}`,
  };
  for (const port of ports) {
    apis.push({
      proc: spawnScript('api/server.ts', childTestEnv({ ...env, PORT: String(port) })),
      url: `http://127.0.0.1:${port}`,
    });
  }
  await Promise.all([...apis.map((a) => a.proc.waitFor(/api listening/, 60_000)), startWorker()]);
}, 120_000);

afterAll(async () => {
  for (const c of clients) await c.close().catch(() => undefined);
  for (const a of apis) {
    a.proc.child.kill('SIGTERM');
    await a.proc.exited();
  }
  for (const w of workers) w.crash();
  await fake?.close();
});

const keep = (c: Client): Client => {
  clients.push(c);
  return c;
};

async function accessToken(on: string, creds: MachineClient): Promise<string> {
  const res = await fetch(`${on}/oauth/token`, {
    method: 'POST',
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      authorization: `Basic ${Buffer.from(`${creds.client_id}:${creds.client_secret}`).toString('base64')}`,
    },
    body: 'grant_type=client_credentials',
  });
  expect(res.status).toBe(200);
  return ((await res.json()) as { access_token: string }).access_token;
}

async function setup(on: string): Promise<{ creds: MachineClient; agentId: string; serviceToken: string }> {
  const org = await buildOrg();
  const agent = await fetch(`${on}/api/agents`, {
    method: 'POST',
    headers: { authorization: bearer(org.serviceToken), 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'Helper', system_prompt: 'Be brief.' }),
  }).then((r) => r.json() as Promise<{ agent: { id: string } }>);
  // The endpoint's scope and those of the REST routes its tools stand for (issue 38).
  const serviceToken = await buildServiceToken(org, ['mcp', 'agents:read', 'chats:write']);
  return { creds: await registerMachineClient(on, serviceToken), agentId: agent.agent.id, serviceToken };
}

it('a session begun on one api process goes on on the other, also after the first one was killed', async () => {
  const { creds, agentId } = await setup(apis[0].url);
  const onA = keep(await connectMachine(apis[0].url, creds));
  const sessionId = (onA.transport as StreamableHTTPClientTransport).sessionId!;
  expect(sessionId).toMatch(/^mcps_/);
  // A token from either process's token endpoint, the session from A's initialize: B serves it.
  const token = await accessToken(apis[1].url, creds);
  const onB = keep(await connectWithToken(apis[1].url, token, sessionId));
  const agents = await onB.callTool({ name: 'get_agent', arguments: { agent_id: agentId } });
  expect((agents.structuredContent as { agent: { id: string } }).agent.id).toBe(agentId);

  // Process A dies; B goes on with the same session.
  const [a] = apis;
  a.proc.crash();
  await a.proc.exited();
  const after = await onB.callTool({ name: 'list_agents', arguments: {} });
  expect(after.isError).toBeFalsy();
  // And B closes it: the session is over everywhere.
  await (onB.transport as StreamableHTTPClientTransport).terminateSession();
  const closed = await fetch(`${apis[1].url}/mcp`, {
    method: 'POST',
    headers: {
      authorization: bearer(token),
      'mcp-session-id': sessionId,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
    },
    body: JSON.stringify({ jsonrpc: '2.0', id: 9, method: 'tools/list' }),
  });
  expect(closed.status).toBe(404);
}, 60_000);

it('a worker killed mid-call: the execute_agent call answers the whole reply, each character once', async () => {
  const b = apis[1].url;
  const { creds, agentId } = await setup(b);
  const client = keep(await connectWithToken(b, await accessToken(b, creds)));
  const progress: string[] = [];
  let crashed: Promise<void> | undefined;
  const result = await client.callTool(
    { name: 'execute_agent', arguments: { agent_id: agentId, message: '[chunks:40][slow:100]' } },
    undefined,
    {
      timeout: 120_000,
      resetTimeoutOnProgress: true,
      onprogress: (p) => {
        progress.push(p.message ?? '');
        // Far enough into the reply, the worker dies; a new one picks the execution up after the heartbeat timeout.
        if (progress.join('').length >= 50 && !crashed) {
          const first = workers[0];
          first.crash();
          crashed = first.exited().then(async () => void (await startWorker()));
        }
      },
    }
  );
  await crashed;
  expect(crashed).toBeDefined();
  const expected = Array.from({ length: 40 }, (_, i) => `tok${i + 1} `).join('');
  expect(result.isError).toBeFalsy();
  expect(result.structuredContent).toMatchObject({ status: 'completed', result: expected });
  expect(progress.join('')).toBe(expected);
}, 120_000);
