/**
 * MCP tools through the real tool loop: a real MCP server on loopback (the official SDK's server, streamable HTTP
 * over TLS, two tools), the fake Anthropic server answering with `tool_use` blocks through the official SDK, the
 * real workflow and worker. The call reaches the server with the sealed header, its result reaches the model, and
 * every call and result is a `message` event of the execution's stream (and a `tool.call` / `tool.result` of the
 * chat's). A tool outside the allow-list and a server that is down are error results for the model, not failed
 * executions. A worker killed after a call's result was recorded never repeats the call; one killed while the call
 * ran does not send it again either (at most once).
 */
import { randomInt } from 'node:crypto';
import { toolEventKind } from '../../activities/chatStream';
import { readEvents } from '../../commands/eventLog';
import { Execution } from '../../models';
import { chatFinished, currentAs, startChat } from '../helpers/current';
import { buildOrg } from '../helpers/factories';
import { useStackWithMcpServer } from '../helpers/mcpServer';
import { useTestDatabase } from '../helpers/mongo';
import { parseSse, waitForEvent } from '../helpers/sse';
import { until } from '../helpers/until';
import { v1As } from '../helpers/v1';
import { useTestWorker, useWorkerProcesses } from '../helpers/worker';

const db = useTestDatabase();
const SECRET = 'Bearer mcp-secret-1234';
// No worker in the test process at the file's level: the crash tests start worker processes on the same queue.
const { stack, mcp } = useStackWithMcpServer('mcp-tools');

/** An organization with the test server registered as `calc` and an agent using it. */
async function agentWithCalc(allowedTools?: string[]) {
  const org = await buildOrg();
  const api = v1As(stack.t, org.apiToken);
  const server = await api.post('/mcp-servers', {
    name: 'calc',
    url: mcp.url,
    headers: { Authorization: SECRET },
    ...(allowedTools ? { allowedTools } : {}),
  });
  expect(server.status).toBe(200);
  const agent = await api.post('/agents', {
    name: 'Calculator',
    systemPrompt: 'Use your tools.',
    mcpServerIds: [server.body.mcpServer.id],
  });
  expect(agent.status).toBe(200);
  return { org, api, serverId: server.body.mcpServer.id as string, agentId: agent.body.id as string };
}

type Data = Record<string, unknown>;
const toolMessages = (events: Array<{ event?: string; data: string }>): Data[] =>
  events
    .filter((e) => e.event === 'message')
    .map((e) => JSON.parse(e.data) as Data)
    .filter((d) => d.messageType === 'tool_use' || d.messageType === 'tool_result');

describe('with a worker in the test process', () => {
  useTestWorker(() => stack.t, { describe: true });

  it('offers the allowed tools, calls the server, gives its result to the model and streams every step', async () => {
    const { api, serverId, agentId } = await agentWithCalc(['add']);
    const a = randomInt(1_000_000);
    const message = `[tool:calc__add {"a":${a},"b":3}] [tool:calc__shout {"text":"hi"}]`;
    const res = await api.post(`/agents/${agentId}/execute`, { message, stream: true });
    expect(res.status).toBe(200);
    const events = parseSse(res.text);
    // The stream's order holds: meta, messages (deltas, tool calls and results, the reply), result.
    expect(events[0].event).toBe('meta');
    expect(events.at(-1)!.event).toBe('result');
    expect(events.slice(1, -1).every((e) => e.event === 'message')).toBe(true);

    const tools = toolMessages(events);
    const mcpRef = { serverId, server: 'calc', tool: 'add' };
    expect(tools.map((d) => [d.messageType, d.name])).toEqual([
      ['tool_use', 'calc__add'],
      ['tool_use', 'calc__shout'],
      ['tool_result', 'calc__add'],
      ['tool_result', 'calc__shout'],
    ]);
    expect(tools[0]).toMatchObject({ input: { a, b: 3 }, mcp: mcpRef });
    expect(tools[2]).toMatchObject({ content: `sum=${a + 3}`, isError: false, mcp: mcpRef });
    // A tool outside the allow-list is never offered nor sent: the model is told.
    expect(tools[3]).toMatchObject({ content: 'The tool shout of calc is not allowed for agents', isError: true });

    // The call reached the server once, with the sealed header.
    expect(mcp.calls.filter((c) => c.args.a === a)).toEqual([
      { tool: 'add', args: { a, b: 3 }, authorization: SECRET },
    ]);
    expect(mcp.calls.some((c) => c.tool === 'shout')).toBe(false);

    // The model was offered the allowed tool beside the file tools, and got the result back as a tool_result.
    const mine = stack.fake.requests.filter((r) => JSON.stringify(r.messages).includes(String(a)));
    expect(mine).toHaveLength(2);
    const offered = mine[0].tools as Array<{ name: string; description: string; input_schema: Data }>;
    expect(offered.map((x) => x.name)).toEqual(['list_files', 'read_file', 'write_file', 'calc__add']);
    expect(offered[3].description).toBe('[Tool "add" of the MCP server "calc"] Adds two numbers');
    expect(offered[3].input_schema).toMatchObject({ type: 'object', properties: { a: { type: 'number' } } });
    const last = mine[1].messages!.at(-1)!;
    expect(last.content).toEqual([
      expect.objectContaining({ type: 'tool_result', content: `sum=${a + 3}` }),
      expect.objectContaining({ type: 'tool_result', is_error: true }),
    ]);

    // The final reply streams and is the execution's result; the record replays the same events.
    const reply = `Using tools.Tool results: sum=${a + 3} | The tool shout of calc is not allowed for agents`;
    const executionId = JSON.parse(events[0].data).executionId as string;
    const exec = await api.get(`/executions/${executionId}`);
    expect(exec.body.execution).toMatchObject({ status: 'completed', result: reply });
    const replay = await api.get(`/executions/${executionId}/stream`);
    expect(toolMessages(parseSse(replay.text))).toEqual(tools);
    // No header value anywhere in the stream.
    expect(res.text).not.toContain('mcp-secret');
  }, 90_000);

  it('a server that is down gives the model an error result; the execution completes', async () => {
    const org = await buildOrg();
    const api = v1As(stack.t, org.apiToken);
    const down = await api.post('/mcp-servers', { name: 'gone', url: mcp.url.replace(/:\d+\//, ':9/') });
    const agent = await api.post('/agents', {
      name: 'A',
      systemPrompt: 'p',
      mcpServerIds: [down.body.mcpServer.id],
    });
    const res = await api.post(`/agents/${agent.body.id}/execute`, { message: '[tool:gone__add {"a":1,"b":2}]' });
    expect(res.status).toBe(200);
    expect(res.body.result).toMatch(/^Using tools\.Tool results: The MCP server gone is unavailable: .*ECONNREFUSED/);
    const events = await readEvents(res.body.executionId);
    const results = events.filter((e) => toolEventKind(e) === 'tool_result');
    expect(results).toHaveLength(1);
    expect(results[0].data).toMatchObject({ name: 'gone__add', isError: true });
    expect((await Execution.findById(res.body.executionId).lean())!.status).toBe('completed');
  }, 60_000);
});

describe('a worker killed in the middle of the tool loop', () => {
  const { start: startWorker, workers } = useWorkerProcesses(stack, db);

  async function chatWithCalc() {
    const { org, serverId } = await agentWithCalc();
    const api = currentAs(stack.t, org.serviceToken);
    const agent = await api.post('/agents', { name: 'Calc', system_prompt: 'Add.', mcp_server_ids: [serverId] });
    const ws = await api.post('/workspaces', { name: 'Sums' });
    const chat = await startChat(stack.t, stack.base, org.serviceToken, agent.body.agent.id, ws.body.workspace.id);
    return { serverId, ...chat };
  }

  it('after the result was recorded, the next worker continues from it: the call is never repeated', async () => {
    const first = await startWorker();
    const c = await chatWithCalc();
    const a = randomInt(1_000_000);
    const execId = await c.send(`[tool:calc__add {"a":${a},"b":1}][slow:300]`);
    await waitForEvent(c.stream, (e) => e.event === 'tool.result');
    // Killed while the model writes its answer to the tool result (slowly).
    first.crash();
    await first.exited();
    await startWorker();
    await waitForEvent(c.stream, chatFinished);

    expect(mcp.calls.filter((x) => x.args.a === a)).toHaveLength(1);
    const events = await readEvents(execId);
    expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
    expect(events.filter((e) => toolEventKind(e) === 'tool_use')).toHaveLength(1);
    expect(events.filter((e) => toolEventKind(e) === 'tool_result')).toHaveLength(1);
    const exec = await Execution.findById(execId).lean();
    expect(exec).toMatchObject({ status: 'completed', result: `Using tools.Tool results: sum=${a + 1}` });
    // The chat's stream shows the call and its result with the server and tool.
    const call = c.stream.events.find((e) => e.event === 'tool.call')!;
    expect(JSON.parse(call.data)).toMatchObject({
      execution_id: execId,
      name: 'calc__add',
      input: { a, b: 1 },
      mcp: { server_id: c.serverId, server: 'calc', tool: 'add' },
    });
    c.stream.close();
  }, 240_000);

  it('while the call ran, the next worker does not send it again: the model is told it was interrupted', async () => {
    const running = workers.at(-1)!;
    const c = await chatWithCalc();
    const a = randomInt(1_000_000);
    const execId = await c.send(`[tool:calc__add {"a":${a},"b":1,"delayMs":4000}]`);
    // The call reached the server.
    await until(async () => mcp.calls.some((x) => x.args.a === a), Boolean, 60_000, 50);
    // Killed while the server works on the call.
    running.crash();
    await running.exited();
    await startWorker();
    await waitForEvent(c.stream, chatFinished);

    expect(mcp.calls.filter((x) => x.args.a === a)).toHaveLength(1);
    const events = await readEvents(execId);
    const results = events.filter((e) => toolEventKind(e) === 'tool_result');
    expect(results).toHaveLength(1);
    expect(results[0].data).toMatchObject({ isError: true, content: expect.stringMatching(/interrupted/) });
    expect((await Execution.findById(execId).lean())!.status).toBe('completed');
    c.stream.close();
  }, 240_000);
});
