/**
 * Control characters in request strings [issue 30 point 9], over real HTTP on every surface (v1, current, MCP
 * tools, OAuth registration): refused with 400 naming the field before any store is touched (the shared
 * validation layer, lib/ajv.ts `check`); and a `once` schedule outside the engine's years 2000–2100 is 400.
 */
import { Agent, Mission, Space, Task } from '../../models';
import { useServedTestApp } from '../helpers/app';
import { currentAs } from '../helpers/current';
import { buildOrg } from '../helpers/factories';
import { connectWithToken, registerClient } from '../helpers/mcp';
import { useTestDatabase } from '../helpers/mongo';
import { v1As } from '../helpers/v1';

useTestDatabase();
const app = useServedTestApp({}, { appUrl: true });

const refused = (field: string) => `Field ${field} must not contain control characters`;

/** Records of every kind the requests below would write. */
const counts = async () =>
  Promise.all([Agent.countDocuments(), Space.countDocuments(), Task.countDocuments(), Mission.countDocuments()]);

describe('control characters', () => {
  it('are refused with 400 naming the field on the current and v1 surfaces, nothing stored', async () => {
    const org = await buildOrg();
    const api = currentAs(app.t, org.serviceToken);
    const v1 = v1As(app.t, org.apiToken);
    const agent = (await api.post('/agents', { name: 'Ok', system_prompt: 'x' })).body.agent.id as string;
    const workspace = (await api.post('/workspaces', { name: 'W' })).body.workspace.id as string;
    const chat = (await api.post('/chats', { agent_id: agent, workspace_id: workspace })).body.chat?.id as string;
    expect(chat).toBeDefined();
    const before = await counts();

    const cases: Array<[string, () => Promise<{ status: number; body: Record<string, unknown> }>, string]> = [
      ['current agent name (NUL)', () => api.post('/agents', { name: 'nul\u0000byte', system_prompt: 'x' }), 'name'],
      ['workspace name (U+0085)', () => api.post('/workspaces', { name: 'next\u0085line' }), 'name'],
      ['workspace name (ESC)', () => api.post('/workspaces', { name: 'esc\u001b[31m' }), 'name'],
      ['chat options', () => api.patch(`/chats/${chat}/options`, { title: 'a\u0000' }), 'title'],
      ['chat message', () => api.post(`/chats/${chat}/messages`, { message: 'hi\u0000' }), 'message'],
      [
        'mission',
        () => api.post('/missions', { title: 'm\u0000', goal: 'g', agentType: agent, schedule: { type: 'manual' } }),
        'title',
      ],
      ['v1 agent tags', () => v1.post('/agents', { name: 'A', systemPrompt: 'x', tags: ['ok', 'b\u0000'] }), 'tags.1'],
      ['v1 task', () => v1.post('/tasks', { title: 'task\u0000' }), 'title'],
      ['v1 space', () => v1.post('/spaces', { name: 'lone \ud800 surrogate' }), 'name'],
      ['object key', () => api.post('/workspaces', { name: 'x', ['k\u0000']: 1 }), 'k\u0000'],
    ];
    for (const [name, send, field] of cases) {
      const res = await send();
      const message = (res.body.error as { message?: string } | undefined)?.message ?? res.body.message;
      expect([name, res.status, message]).toEqual([name, 400, refused(field)]);
    }
    expect(await counts()).toEqual(before);
    // Tabs and line breaks are text.
    expect((await api.post('/workspaces', { name: 'tab\there\nand there' })).status).toBe(201);
  });

  it('are refused in MCP tool arguments and registrations alike', async () => {
    const org = await buildOrg();
    const client = await connectWithToken(app.base, org.serviceToken);
    const before = await counts();
    const result = await client
      .callTool({
        name: 'create_mission',
        arguments: { title: 'm\u0000', goal: 'g', agentType: 'x', schedule: { type: 'manual' } },
      })
      .then(
        (r) => JSON.stringify(r),
        (err: Error) => err.message
      );
    // The JSON-RPC message itself is refused (400), naming the argument.
    expect(result).toContain(refused('params.arguments.title'));
    expect(await counts()).toEqual(before);
    await client.close();
    const reg = await registerClient(app.base, { client_name: 'a\u0000', redirect_uris: ['http://127.0.0.1:9/cb'] });
    expect(reg.status).toBe(400);
    expect(((await reg.json()) as { error_description: string }).error_description).toBe(refused('client_name'));
  });
});

describe('schedule times', () => {
  it('a once schedule outside the years 2000–2100 is 400 on both surfaces, nothing stored', async () => {
    const org = await buildOrg();
    const api = currentAs(app.t, org.serviceToken);
    const agent = (await api.post('/agents', { name: 'Ok', system_prompt: 'x' })).body.agent.id as string;
    const before = await Mission.countDocuments();
    for (const value of ['1970-01-01T00:00:00Z', '2101-01-01T00:00:00Z', '1999-12-31T23:59:59Z']) {
      const res = await api.post('/missions', {
        title: 'm',
        goal: 'g',
        agentType: agent,
        schedule: { type: 'once', value },
      });
      expect([value, res.status, res.body.error?.message]).toEqual([
        value,
        400,
        'Invalid schedule.value: the time must fall in the years 2000 to 2100',
      ]);
    }
    expect(await Mission.countDocuments()).toBe(before);
  });
});
