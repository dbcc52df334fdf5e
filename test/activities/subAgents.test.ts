/**
 * Sub-agents through the real tool loop: the fake Anthropic server answering with `delegate_to_agent` tool use
 * through the official SDK, the real workflow and worker, real HTTP. The child execution runs on its own workflow,
 * its reply reaches the parent's model, its usage adds up in the parent's, and the tree shows it; depth and fan-out
 * limits are error results for the model; cancelling the parent cancels the child; a worker killed while the
 * parent waits for its child never starts the child twice.
 */
import { randomInt } from 'node:crypto';
import { toolEventKind } from '../../activities/chatStream';
import { subAgentIds } from '../../commands/subAgents';
import type { AuthContext } from '../../commands/tokens';
import { organizationUsage } from '../../commands/usage';
import { readEvents, type LoggedEvent } from '../../commands/eventLog';
import { Execution, type ExecutionDoc } from '../../models';
import { msToNumber } from '@temporalio/common/lib/time';
import { EXECUTION_TASK_TIMEOUT, executionWorkflowId } from '../../workflows/ids';
import { agentIdKey, organizationIdKey, workKindKey } from '../../workflows/searchAttributes';
import { chatFinished, currentAs } from '../helpers/current';
import { bearer, buildMember, buildOrg } from '../helpers/factories';
import { useTestDatabase } from '../helpers/mongo';
import { openSse, parseSse, waitForEvent } from '../helpers/sse';
import { until } from '../helpers/until';
import { v1As, v1Error } from '../helpers/v1';
import { useExecutionStack, useTestWorker, useWorkerProcesses } from '../helpers/worker';

const db = useTestDatabase();
// No worker in the test process at the file's level: the crash test starts worker processes on the same queue.
const stack = useExecutionStack(
  'subagents',
  {
    DEFAULT_MODEL: 'claude-test',
    // Small limits, so that a test reaches them: a sub-agent cannot delegate; two sub-agents per execution.
    SUBAGENT_MAX_DEPTH: '1',
    SUBAGENT_MAX_PER_EXECUTION: '2',
  },
  { worker: false }
);

type Data = Record<string, unknown>;
type Api = ReturnType<typeof v1As>;

/** A directive making the fake model call `delegate_to_agent` (`]` and `[` of a nested directive escaped). */
const delegate = (agentId: string, message: string): string =>
  `[tool:delegate_to_agent ${JSON.stringify({ agentId, message }).replace(/\[/g, '\\u005b').replace(/\]/g, '\\u005d')}]`;

async function agent(api: Api, name: string, subAgentIds: string[] = []): Promise<string> {
  const res = await api.post('/agents', { name, role: `${name} role`, systemPrompt: `You are ${name}.`, subAgentIds });
  expect(res.status).toBe(200);
  return res.body.id as string;
}

const messages = (events: Array<{ event?: string; data: string }>): Data[] =>
  events.filter((e) => e.event === 'message').map((e) => JSON.parse(e.data) as Data);
const ofType = (events: LoggedEvent[], type: string): LoggedEvent[] =>
  events.filter((e) => e.event === 'message' && (e.data as Data).messageType === type);

/** Indexes of the fake's requests whose first user message is `text`. */
const requestsOf = (text: string): number[] =>
  stack.fake.requests.flatMap((r, i) =>
    r.messages?.[0]?.role === 'user' && r.messages[0].content === text ? [i] : []
  );
const billed = (indexes: number[]) => ({
  input_tokens: indexes.reduce((n, i) => n + stack.fake.usage[i].inputTokens, 0),
  output_tokens: indexes.reduce((n, i) => n + stack.fake.usage[i].outputTokens, 0),
});

describe('agents name their sub-agents', () => {
  it('subAgentIds: an unknown, foreign or invisible agent is 400 on both surfaces; a valid list is stored', async () => {
    const org = await buildOrg();
    const other = await buildOrg();
    const api = v1As(stack.t, org.apiToken);
    const mine = await agent(api, 'Helper');
    const foreign = await agent(v1As(stack.t, other.apiToken), 'Foreign');
    const member = await buildMember(org.organizationId);
    const hidden = (
      await v1As(stack.t, member.apiToken).post('/agents', {
        name: 'Private',
        systemPrompt: 'p',
        visibility: 'private',
      })
    ).body.id as string;
    for (const bad of ['agt_nope', foreign, hidden]) {
      const res = await api.post('/agents', { name: 'Boss', systemPrompt: 'p', subAgentIds: [bad] });
      expect(res.status).toBe(400);
      expect(res.body).toEqual(v1Error(400, 'Bad Request', `Invalid subAgentIds: agent ${bad} not found`));
    }
    const boss = await agent(api, 'Boss', [mine]);
    expect((await api.get(`/agents/${boss}`)).body.agent.subAgentIds).toEqual([mine]);
    expect((await api.patch(`/agents/${boss}`, { subAgentIds: [foreign] })).status).toBe(400);
    expect((await api.patch(`/agents/${boss}`, { subAgentIds: [] })).status).toBe(200);
    expect((await api.get(`/agents/${boss}`)).body.agent.subAgentIds).toEqual([]);

    const current = currentAs(stack.t, org.serviceToken);
    const bad = await current.post('/agents', { name: 'C', system_prompt: 'p', sub_agent_ids: [foreign] });
    expect(bad.status).toBe(400);
    expect(bad.body.error.message).toBe(`Invalid sub_agent_ids: agent ${foreign} not found`);
    const ok = await current.post('/agents', { name: 'C', system_prompt: 'p', sub_agent_ids: [mine] });
    expect(ok.status).toBe(201);
    expect(ok.body.agent.sub_agent_ids).toEqual([mine]);
  });
});

describe('with a worker in the test process', () => {
  useTestWorker(() => stack.t, { describe: true });

  it('runs the task as a child execution: its reply reaches the model, its usage adds up, the tree shows it', async () => {
    const org = await buildOrg();
    const api = v1As(stack.t, org.apiToken);
    const writer = await agent(api, 'Writer');
    const boss = await agent(api, 'Boss', [writer]);
    const task = `write a haiku ${randomInt(1_000_000)}`;
    const message = delegate(writer, task);
    const res = await api.post(`/agents/${boss}/execute`, { message, stream: true });
    expect(res.status).toBe(200);
    const events = parseSse(res.text);
    expect(events[0].event).toBe('meta');
    expect(events.at(-1)!.event).toBe('result');
    const parentId = JSON.parse(events[0].data).executionId as string;

    // The call, the child's start and end under it, then the result the model got: the child's reply.
    const steps = messages(events).filter((d) => d.messageType !== 'stream_event');
    expect(steps.map((d) => d.messageType)).toEqual([
      'tool_use',
      'subagent_started',
      'subagent_finished',
      'tool_result',
      'assistant',
    ]);
    const toolUseId = steps[0].toolUseId as string;
    const childId = subAgentIds(parentId, toolUseId).executionId;
    expect(steps[0]).toMatchObject({ name: 'delegate_to_agent', input: { agentId: writer, message: task } });
    expect(steps[1]).toEqual({ messageType: 'subagent_started', toolUseId, executionId: childId, agentId: writer });
    expect(steps[3]).toMatchObject({ toolUseId, content: `Echo: ${task}`, isError: false });

    // The model was offered the tool naming the agent, and got the child's reply as the call's result.
    const parentRequests = requestsOf(message);
    expect(parentRequests).toHaveLength(2);
    const offered = stack.fake.requests[parentRequests[0]].tools as Array<{
      name: string;
      description: string;
      input_schema: Data;
    }>;
    expect(offered.map((x) => x.name)).toEqual(['list_files', 'read_file', 'write_file', 'delegate_to_agent']);
    expect(offered[3].description).toContain(`- ${writer}: Writer (Writer role)`);
    expect(offered[3].input_schema).toMatchObject({ properties: { agentId: { enum: [writer] } } });
    expect(stack.fake.requests[parentRequests[1]].messages!.at(-1)!.content).toEqual([
      expect.objectContaining({ type: 'tool_result', content: `Echo: ${task}` }),
    ]);

    // The child: its own record, conversation and workflow, one level down.
    const child = (await api.get(`/executions/${childId}`)).body.execution;
    expect(child).toMatchObject({
      status: 'completed',
      agentId: writer,
      input: { message: task },
      result: `Echo: ${task}`,
      parentExecutionId: parentId,
      parentToolCallId: toolUseId,
      rootExecutionId: parentId,
      depth: 1,
      source: 'subagent',
    });
    // The child's outcome comes before its finish's last writes and its workflow's end.
    const childHandle = stack.t.temporal.client.workflow.getHandle(executionWorkflowId(childId));
    await childHandle.result();
    const described = await childHandle.describe();
    expect(described.status.name).toBe('COMPLETED');
    // Started with the same options as the parent's (workflows/executionStart.ts): a dead process is noticed within
    // EXECUTION_TASK_TIMEOUT, not the engine's default 10 s.
    const parentDescribed = await stack.t.temporal.client.workflow.getHandle(executionWorkflowId(parentId)).describe();
    const taskTimeout = (d: typeof described): unknown => d.raw.executionConfig?.defaultWorkflowTaskTimeout?.seconds;
    expect(Number(taskTimeout(described))).toBe(msToNumber(EXECUTION_TASK_TIMEOUT) / 1000);
    expect(taskTimeout(described)).toEqual(taskTimeout(parentDescribed));
    expect(described.typedSearchAttributes.get(workKindKey)).toBe('execution');
    expect(described.typedSearchAttributes.get(agentIdKey)).toBe(writer);
    expect(described.typedSearchAttributes.get(organizationIdKey)).toBe(org.organizationId);

    // Usage: the child's is what its model billed; the parent's adds its own and the child's, in the record and in
    // the stream's `result`.
    const childUsage = billed(requestsOf(task));
    expect(child.usage).toEqual(childUsage);
    expect(steps[2]).toMatchObject({ status: 'completed', usage: childUsage });
    const own = billed(parentRequests);
    const total = {
      input_tokens: own.input_tokens + childUsage.input_tokens,
      output_tokens: own.output_tokens + childUsage.output_tokens,
    };
    const parent = (await api.get(`/executions/${parentId}`)).body.execution;
    expect(parent).toMatchObject({ status: 'completed', result: `Using tools.Tool results: Echo: ${task}`, depth: 0 });
    expect(parent.usage).toEqual(total);
    expect(JSON.parse(events.at(-1)!.data).usage).toEqual(total);
    // The usage report counts each agent's own tokens once.
    const report = await organizationUsage({ organizationId: org.organizationId } as AuthContext, { period: 'daily' });
    const perAgent = report.agents as Array<{ agentId: string; input_tokens: number; output_tokens: number }>;
    expect(perAgent.find((a) => a.agentId === boss)).toMatchObject(own);
    expect(perAgent.find((a) => a.agentId === writer)).toMatchObject(childUsage);

    // The tree: the parent with its child; the child's own tree; another organization gets 404.
    const tree = await api.get(`/executions/${parentId}/tree`);
    expect(tree.status).toBe(200);
    expect(tree.body.tree.execution.id).toBe(parentId);
    expect(tree.body.tree.children.map((c: { execution: { id: string } }) => c.execution.id)).toEqual([childId]);
    expect(tree.body.tree.children[0].children).toEqual([]);
    expect((await api.get(`/executions/${childId}/tree`)).body.tree.execution.id).toBe(childId);
    const other = v1As(stack.t, (await buildOrg()).apiToken);
    for (const id of [parentId, childId])
      expect((await other.get(`/executions/${id}/tree`)).body).toEqual(
        v1Error(404, 'Not Found', 'Execution not found')
      );
  }, 90_000);

  it('in a chat (current surface), the chat stream shows the sub-agent under the call', async () => {
    const org = await buildOrg();
    const api = currentAs(stack.t, org.serviceToken);
    const helper = (await api.post('/agents', { name: 'Helper', system_prompt: 'Help.' })).body.agent.id as string;
    const boss = await api.post('/agents', { name: 'Boss', system_prompt: 'Delegate.', sub_agent_ids: [helper] });
    expect(boss.status).toBe(201);
    const ws = await api.post('/workspaces', { name: 'Delegation' });
    const chat = await api.post('/chats', { agent_id: boss.body.agent.id, workspace_id: ws.body.workspace.id });
    expect(chat.status).toBe(201);
    const chatId = chat.body.chat.id as string;
    const stream = await openSse(`${stack.base}/api/chats/${chatId}/events`, {
      headers: { authorization: bearer(org.serviceToken) },
    });
    const task = `help ${randomInt(1_000_000)}`;
    const sent = await api.post(`/chats/${chatId}/messages`, { message: delegate(helper, task) });
    expect(sent.status).toBe(201);
    const parentId = sent.body.execution.id as string;
    await waitForEvent(stream, chatFinished);
    stream.close();
    const steps = stream.events.filter((e) => /^(tool|subagent)\./.test(e.event ?? ''));
    expect(steps.map((e) => e.event)).toEqual(['tool.call', 'subagent.started', 'subagent.finished', 'tool.result']);
    const toolUseId = (JSON.parse(steps[0].data) as Data).tool_use_id as string;
    const childId = subAgentIds(parentId, toolUseId).executionId;
    expect(JSON.parse(steps[1].data)).toEqual({
      chat_id: chatId,
      execution_id: parentId,
      tool_use_id: toolUseId,
      subagent_execution_id: childId,
      agent_id: helper,
    });
    expect(JSON.parse(steps[2].data)).toMatchObject({ subagent_execution_id: childId, status: 'completed' });
    expect(JSON.parse(steps[3].data)).toMatchObject({ content: `Echo: ${task}`, is_error: false });
    // No empty delta stands for the markers; the chat's seqs have no gap.
    expect(stream.events.filter((e) => e.event === 'message.delta' && JSON.parse(e.data).text === '')).toEqual([]);
    expect(stream.events.map((e) => Number(e.id))).toEqual(stream.events.map((_, i) => i + 1));
  }, 90_000);

  it('a parent that ends otherwise than completed cancels its running child in its own finish', async () => {
    const org = await buildOrg();
    const api = v1As(stack.t, org.apiToken);
    const slow = await agent(api, 'Slow');
    const boss = await agent(api, 'Boss', [slow]);
    const reply = api
      .post(`/agents/${boss}/execute`, { message: delegate(slow, `[chunks:400][slow:100] ${randomInt(1_000_000)}`) })
      .then((r) => r);
    const child = await until(
      () => Execution.findOne({ agentId: slow, organizationId: org.organizationId }).lean<ExecutionDoc>(),
      (c) => c?.status === 'running'
    );
    // Only the parent's workflow is cancelled (as a deadline or a failure ends it): no api cascade.
    await stack.t.temporal.client.workflow.getHandle(executionWorkflowId(child!.parentExecutionId!)).cancel();
    expect((await reply).status).toBe(409);
    const after = await until(
      () => Execution.findById(child!._id).lean<ExecutionDoc>(),
      (c) => c?.status === 'cancelled'
    );
    expect(after!.completedAt).not.toBeNull();
  }, 90_000);

  it('past the depth or fan-out limit, the call is an error result for the model; the execution completes', async () => {
    const org = await buildOrg();
    const api = v1As(stack.t, org.apiToken);
    const leaf = await agent(api, 'Leaf');
    const middle = await agent(api, 'Middle', [leaf]);
    const top = await agent(api, 'Top', [middle, leaf]);
    const n = randomInt(1_000_000);
    // Top delegates to Middle (depth 1), which tries to delegate to Leaf (depth 2: past SUBAGENT_MAX_DEPTH=1); then
    // two more calls, the third of the execution past SUBAGENT_MAX_PER_EXECUTION=2.
    const nested = delegate(leaf, `deep ${n}`);
    const message = `${delegate(middle, nested)} ${delegate(leaf, `a ${n}`)} ${delegate(leaf, `b ${n}`)}`;
    const res = await api.post(`/agents/${top}/execute`, { message });
    expect(res.status).toBe(200);
    const depthError =
      'Delegation depth limit reached: this execution is a sub-agent at depth 1 and sub-agents may nest 1 deep. ' +
      'Do the task yourself.';
    expect(res.body.result).toBe(
      `Using tools.Tool results: Using tools.Tool results: ${depthError} | Echo: a ${n} | ` +
        'Sub-agent limit reached: one execution may start 2 sub-agents'
    );
    const events = await readEvents(res.body.executionId);
    const results = events.filter((e) => toolEventKind(e) === 'tool_result').map((e) => e.data as Data);
    expect(results.map((r) => r.isError)).toEqual([false, false, true]);
    // Two children, none below them.
    const children = await Execution.find({ parentExecutionId: res.body.executionId }).lean<ExecutionDoc[]>();
    expect(children.map((c) => c.agentId).sort()).toEqual([leaf, middle].sort());
    const middleRun = children.find((c) => c.agentId === middle)!;
    expect(middleRun.result).toBe(`Using tools.Tool results: ${depthError}`);
    expect(await Execution.countDocuments({ parentExecutionId: middleRun._id })).toBe(0);
    expect(requestsOf(`deep ${n}`)).toEqual([]);
  }, 90_000);

  it('cancelling the parent cancels the running child', async () => {
    const org = await buildOrg();
    const api = v1As(stack.t, org.apiToken);
    const slow = await agent(api, 'Slow');
    const boss = await agent(api, 'Boss', [slow]);
    // The child's reply takes 40 s: the JSON execute of the parent answers once it is cancelled.
    const reply = api.post(`/agents/${boss}/execute`, {
      message: delegate(slow, `[chunks:400][slow:100] ${randomInt(1_000_000)}`),
    });
    const done = reply.then((r) => r);
    const child = await until(
      () => Execution.findOne({ agentId: slow, organizationId: org.organizationId }).lean<ExecutionDoc>(),
      (c) => c?.status === 'running'
    );
    const parentId = child!.parentExecutionId!;
    const cancelled = await api.post(`/executions/${parentId}/cancel`);
    expect(cancelled.status).toBe(200);
    expect(cancelled.body.execution.status).toBe('cancelled');
    expect((await done).body).toEqual(v1Error(409, 'Conflict', 'Execution was cancelled'));
    const after = await until(
      () => Execution.findById(child!._id).lean<ExecutionDoc>(),
      (c) => c?.status === 'cancelled'
    );
    expect(after!.error).toEqual({ message: 'Execution cancelled', code: 'cancelled' });
    // Its stream ends with the terminal event (the finish writes it beside the record's outcome, not before it);
    // its workflow ends.
    const last = await until(
      async () => (await readEvents(child!._id)).at(-1),
      (e) => e?.event !== 'message'
    );
    expect(last).toMatchObject({ event: 'error', data: { message: 'Execution cancelled' } });
    // The terminal event is visible with the outcome write; the finish's last writes (the chat, service events) and
    // the workflow's end come after it.
    const handle = stack.t.temporal.client.workflow.getHandle(executionWorkflowId(child!._id));
    await handle.result();
    expect((await handle.describe()).status.name).toBe('COMPLETED');
    expect(await Execution.findById(parentId).lean<ExecutionDoc>()).toMatchObject({ status: 'cancelled' });
  }, 90_000);
});

describe('a worker killed while the parent waits for its child', () => {
  const { start: startWorker } = useWorkerProcesses(stack, db);

  it('the next worker waits for the same child: it is never started twice', async () => {
    const first = await startWorker();
    const org = await buildOrg();
    const api = v1As(stack.t, org.apiToken);
    const slow = await agent(api, 'Slow');
    const boss = await agent(api, 'Boss', [slow]);
    // The child's reply takes about 4 s.
    const reply = api
      .post(`/agents/${boss}/execute`, { message: delegate(slow, `[chunks:40][slow:100] ${randomInt(1_000_000)}`) })
      .then((r) => r);
    const parent = await until(
      () => Execution.findOne({ agentId: boss, organizationId: org.organizationId }).lean<ExecutionDoc>(),
      (e) => e !== null
    );
    // Killed once the parent recorded the child's start (the child runs on the same worker and dies too).
    await until(
      () => readEvents(parent!._id),
      (events) => ofType(events, 'subagent_started').length === 1,
      60_000,
      20
    );
    first.crash();
    await first.exited();
    await startWorker();
    const res = await reply;
    expect(res.status).toBe(200);

    // One child, one run of its workflow; the parent's stream has one call, one start, one end, one result.
    const children = await Execution.find({ parentExecutionId: parent!._id }).lean<ExecutionDoc[]>();
    expect(children).toHaveLength(1);
    const child = children[0];
    expect(child.status).toBe('completed');
    expect(res.body.result).toBe(`Using tools.Tool results: ${child.result}`);
    const runs: string[] = [];
    for await (const w of stack.t.temporal.client.workflow.list({
      query: `WorkflowId = '${executionWorkflowId(child._id)}'`,
    }))
      runs.push(w.runId);
    expect(runs).toHaveLength(1);
    const events = await readEvents(parent!._id);
    expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
    for (const type of ['tool_use', 'subagent_started', 'subagent_finished', 'tool_result'])
      expect(ofType(events, type)).toHaveLength(1);
    expect(ofType(events, 'subagent_started')[0].data).toMatchObject({ executionId: child._id });
  }, 240_000);
});
