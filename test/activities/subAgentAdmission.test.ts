/**
 * Sub-agents count against the admission of executions (issue 38 point 7; docs/decisions.md "Sub-agents count
 * against admission"): through real HTTP, the fake Anthropic server and the real workflow and worker, a child takes
 * a slot of its own, and a delegation that finds no free slot is an error result for the model that starts nothing
 * (it never waits: its parent holds a slot meanwhile). With EXECUTION_CONCURRENCY=2, one request holds two
 * executions at most, where it could start 31 before.
 */
import { randomInt } from 'node:crypto';
import { toolEventKind } from '../../activities/chatStream';
import { readEvents } from '../../commands/eventLog';
import { AT_CAPACITY } from '../../commands/subAgents';
import { Execution, type ExecutionDoc } from '../../models';
import { buildOrg } from '../helpers/factories';
import { useTestDatabase } from '../helpers/mongo';
import { v1As } from '../helpers/v1';
import { useExecutionStack } from '../helpers/worker';

useTestDatabase();
const stack = useExecutionStack('subagent-admission', { DEFAULT_MODEL: 'claude-test', EXECUTION_CONCURRENCY: '2' });

/** A directive making the fake model call `delegate_to_agent` (`]` and `[` of a nested directive escaped). */
const delegate = (agentId: string, message: string): string =>
  `[tool:delegate_to_agent ${JSON.stringify({ agentId, message }).replace(/\[/g, '\\u005b').replace(/\]/g, '\\u005d')}]`;

async function agent(api: ReturnType<typeof v1As>, name: string, subAgentIds: string[] = []): Promise<string> {
  const res = await api.post('/agents', { name, role: `${name} role`, systemPrompt: `You are ${name}.`, subAgentIds });
  expect(res.status).toBe(200);
  return res.body.id as string;
}

it('a child takes its own slot; with none free the delegation is refused for the model and starts nothing', async () => {
  const org = await buildOrg();
  const api = v1As(stack.t, org.apiToken);
  const leaf = await agent(api, 'Leaf');
  const middle = await agent(api, 'Middle', [leaf]);
  const top = await agent(api, 'Top', [middle]);
  const n = randomInt(1_000_000);

  // Top holds one slot, Middle the other: Middle's own delegation finds none.
  const res = await api.post(`/agents/${top}/execute`, { message: delegate(middle, delegate(leaf, `deep ${n}`)) });
  expect(res.status).toBe(200);
  expect(res.body.result).toBe(`Using tools.Tool results: Using tools.Tool results: ${AT_CAPACITY}`);
  const [middleRun] = await Execution.find({ parentExecutionId: res.body.executionId }).lean<ExecutionDoc[]>();
  expect(middleRun!.agentId).toBe(middle);
  const refused = (await readEvents(middleRun!._id))
    .filter((e) => toolEventKind(e) === 'tool_result')
    .map((e) => e.data as { isError: boolean; content: string });
  expect(refused).toEqual([expect.objectContaining({ isError: true, content: AT_CAPACITY })]);
  expect(await Execution.countDocuments({ parentExecutionId: middleRun!._id })).toBe(0);

  // Their ends gave both slots back: one level of delegation runs again.
  const again = await api.post(`/agents/${middle}/execute`, { message: delegate(leaf, `shallow ${n}`) });
  expect(again.status).toBe(200);
  expect(again.body.result).toBe(`Using tools.Tool results: Echo: shallow ${n}`);
}, 90_000);
