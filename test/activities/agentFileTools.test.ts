/**
 * Agent file tools through the real tool loop: the fake Anthropic server answers `tool_use` blocks through the
 * official SDK, the activity runs the tools on the workspace's real files (same path rules and caps as the file
 * routes), and every call and result is an event on the execution's and the chat's streams. Then a worker process
 * killed right after a tool call ran: the new worker continues from the recorded result and never runs the call
 * again.
 */
import { readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { toolEventKind } from '../../activities/chatStream';
import { readEvents } from '../../commands/eventLog';
import { Execution } from '../../models';
import { chatFinished, currentAs, startChat } from '../helpers/current';
import { childTestEnv } from '../helpers/env';
import { bearer, buildAgent, buildOrg, buildWorkspace } from '../helpers/factories';
import { useTestDatabase } from '../helpers/mongo';
import { spawnScript, type Spawned } from '../helpers/processes';
import { waitForEvent } from '../helpers/sse';
import { until } from '../helpers/until';
import { useExecutionStack, useTestWorker } from '../helpers/worker';

const db = useTestDatabase();
// No worker in the test process at the file's level: the crash test starts worker processes on the same queue.
const stack = useExecutionStack('tools', { DEFAULT_MODEL: 'claude-test' }, { worker: false });

async function chatInWorkspace() {
  const org = await buildOrg();
  const api = currentAs(stack.t, org.serviceToken);
  const agentId = await buildAgent(stack.t, org, { name: 'Writer', system_prompt: 'Write reports.' });
  const { id: workspaceId, dir } = await buildWorkspace(stack.t, { org, name: 'Jobs' });
  const chat = await startChat(stack.t, stack.base, org.serviceToken, agentId, workspaceId);
  return { org, api, workspaceId, ...chat, dir };
}

describe('with a worker in the test process', () => {
  useTestWorker(() => stack.t, { describe: true });

  it('writes, lists and reads workspace files through tool calls; each call and result is a stream event', async () => {
    const c = await chatInWorkspace();
    await c.api.post(`/workspaces/${c.workspaceId}/files/directory`, { path: 'in' });
    const write = '[tool:write_file {"path":"out/report.md","content":"# Report\\nAll good."}]';
    const execId = await c.send(`${write} [tool:list_files {"path":""}] [tool:read_file {"path":"../../escape.txt"}]`);
    await waitForEvent(c.stream, chatFinished);

    // The artifact is a workspace file, readable through the file routes.
    expect(readFileSync(path.join(c.dir, 'out/report.md'), 'utf8')).toBe('# Report\nAll good.');
    const read = await stack.t.request
      .get(`/api/workspaces/${c.workspaceId}/files/content`)
      .query({ path: 'out/report.md' })
      .set('Authorization', bearer(c.org.serviceToken));
    expect(read.text).toBe('# Report\nAll good.');

    // The model was offered the tools, and got the results back in a tool_result turn.
    const first = stack.fake.requests.find((r) => JSON.stringify(r.messages).includes('out/report.md'))!;
    expect((first.tools as { name: string }[]).map((x) => x.name)).toEqual(['list_files', 'read_file', 'write_file']);

    // The execution's stream: text, the three calls, their results in order, then the final reply.
    const events = await readEvents(execId);
    // Each call and each result is a `message` event (messageType tool_use / tool_result).
    const tools = events.filter((e) => toolEventKind(e) !== null);
    expect(tools.every((e) => e.event === 'message')).toBe(true);
    expect(tools.map((e) => `${String(e.data.messageType)} ${String(e.data.name)}`)).toEqual([
      'tool_use write_file',
      'tool_use list_files',
      'tool_use read_file',
      'tool_result write_file',
      'tool_result list_files',
      'tool_result read_file',
    ]);
    expect(tools[0].data.input).toEqual({ path: 'out/report.md', content: '# Report\nAll good.' });
    const results = tools.slice(3).map((e) => e.data as { content: string; isError: boolean });
    expect(results[0]).toEqual({
      messageType: 'tool_result',
      toolUseId: tools[0].data.toolUseId,
      name: 'write_file',
      content: 'Created out/report.md (18 bytes)',
      isError: false,
    });
    expect(JSON.parse(results[1].content)).toMatchObject({
      path: '',
      entries: [
        { path: 'in', type: 'directory' },
        { path: 'out', type: 'directory' },
      ],
    });
    // A path outside the workspace is refused to the model, as to any client.
    expect(results[2]).toMatchObject({
      isError: true,
      content: expect.stringMatching(/^Invalid path: must stay inside/),
    });

    const exec = await Execution.findById(execId).lean();
    expect(exec).toMatchObject({ status: 'completed' });
    expect(exec!.result).toBe(`Using tools.Tool results: ${results.map((r) => r.content).join(' | ')}`);

    // The chat's stream mirrors every call and result.
    const chatTools = c.stream.events.filter((e) => e.event === 'tool.call' || e.event === 'tool.result');
    expect(chatTools.map((e) => e.event)).toEqual([
      'tool.call',
      'tool.call',
      'tool.call',
      'tool.result',
      'tool.result',
      'tool.result',
    ]);
    expect(JSON.parse(chatTools[3].data)).toMatchObject({
      chat_id: c.chatId,
      execution_id: execId,
      name: 'write_file',
      is_error: false,
    });
    expect(c.stream.events.map((e) => Number(e.id))).toEqual(c.stream.events.map((_, i) => i + 1));
    c.stream.close();
  }, 90_000);
});

describe('a worker killed after a tool call ran', () => {
  const workers: Spawned[] = [];
  afterAll(() => workers.forEach((w) => w.crash()));

  it('the next worker continues from the recorded result: the call never runs twice', async () => {
    const startWorker = async (): Promise<Spawned> => {
      const w = spawnScript(
        'worker/index.ts',
        childTestEnv({ ...stack.env, MONGODB_URI: db.uri, WORKSPACES_DIR: stack.t.config.workspacesDir })
      );
      workers.push(w);
      await w.waitFor(/worker started/, 90_000);
      return w;
    };
    const first = await startWorker();
    const c = await chatInWorkspace();
    const prompt = '[tool:write_file {"path":"artifact.txt","content":"once"}][slow:300]';
    const execId = await c.send(prompt);
    await waitForEvent(c.stream, (e) => e.event === 'tool.result');
    const file = path.join(c.dir, 'artifact.txt');
    const written = statSync(file);
    const mineSoFar = () => stack.fake.requests.filter((r) => JSON.stringify(r.messages).includes('artifact.txt'));
    // Killed while the model writes its answer to the tool result (slowly): once the second round reached the model.
    await until(
      async () => mineSoFar().length,
      (n) => n >= 2,
      30_000,
      20,
      'the second model round'
    );
    first.crash();
    await first.exited();
    await startWorker();
    await waitForEvent(c.stream, chatFinished);

    const events = await readEvents(execId);
    expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
    expect(events.filter((e) => toolEventKind(e) === 'tool_use')).toHaveLength(1);
    expect(events.filter((e) => toolEventKind(e) === 'tool_result')).toHaveLength(1);
    // The file was written once: the same inode and modification time as right after the call.
    const after = statSync(file);
    expect([after.ino, after.mtimeMs]).toEqual([written.ino, written.mtimeMs]);
    expect(readFileSync(file, 'utf8')).toBe('once');
    // The model was asked for the first round once; the retry sent the recorded call and result back.
    const mine = mineSoFar();
    // (a retry whose prefill is text of the answer ends with an assistant turn: that is not the first round)
    const firstRound = mine.filter(
      (r) => r.messages!.at(-1)!.role === 'user' && typeof r.messages!.at(-1)!.content === 'string'
    );
    expect(firstRound).toHaveLength(1);
    expect(mine.length).toBeGreaterThanOrEqual(3);
    const exec = await Execution.findById(execId).lean();
    expect(exec).toMatchObject({
      status: 'completed',
      result: 'Using tools.Tool results: Created artifact.txt (4 bytes)',
    });
    const text = c.stream.events
      .filter((e) => e.event === 'message.delta')
      .map((e) => (JSON.parse(e.data) as { text: string }).text)
      .join('');
    expect(text).toBe(exec!.result);
    c.stream.close();
  }, 180_000);
});
