/**
 * Skills reach the model: an execution of an agent with two skills sends the fake Anthropic server (through the
 * official SDK, the real workflow and worker) the agent's system prompt followed by the skills' prompts in the
 * agent's `skillIds` order, framed with name, version, title and description (commands/systemPrompt.ts); a skill's
 * new version reaches the next execution, a deleted skill none; the file tools are still offered; a job's iteration
 * gets the skills before the job protocol.
 */
import { randomBytes } from 'node:crypto';
import { SKILLS_PREAMBLE } from '../../../commands/systemPrompt';
import type { FakeMessagesRequest } from '../../../scripts/fakes/anthropic';
import { currentAs } from '../../helpers/current';
import { buildOrg } from '../../helpers/factories';
import { useTestDatabase } from '../../helpers/mongo';
import { v1As } from '../../helpers/v1';
import { useExecutionStack } from '../../helpers/worker';

useTestDatabase();
const stack = useExecutionStack('skill-exec', { DEFAULT_MODEL: 'claude-test' });

/** The request the fake received for a message (each test's messages are unique). */
function requestFor(message: string): FakeMessagesRequest {
  const found = stack.fake.requests.filter((r) => JSON.stringify(r.messages).includes(message));
  expect(found).toHaveLength(1);
  return found[0];
}

const block = (name: string, version: number, title: string, description: string, prompt: string): string =>
  `<skill name="${name}" version="${version}" title="${title}">\nDescription: ${description}\n\n${prompt}\n</skill>`;

it('the skills’ prompts follow the system prompt in the agent’s order; updates and deletes reach the next execution', async () => {
  const org = await buildOrg();
  const api = v1As(stack.t, org.apiToken);
  const research = (
    await api.post('/skills', {
      name: 'web-research',
      displayName: 'Web research',
      description: 'Finds sources',
      prompt: '# Research\nCite every source.',
      category: 'research',
    })
  ).body.skill;
  const style = (
    await api.post('/skills', {
      name: 'house-style',
      displayName: 'House style',
      description: 'How we write',
      prompt: 'Write in British English.',
      builtInTools: ['read_file'],
    })
  ).body.skill;
  const agent = (
    await api.post('/agents', { name: 'Writer', systemPrompt: 'You write reports.', skillIds: [style.id, research.id] })
  ).body.id;

  const first = `first ${randomBytes(4).toString('hex')}`;
  const res = await api.post(`/agents/${agent}/execute`, { message: first });
  expect([res.status, res.body.result]).toEqual([200, `Echo: ${first}`]);
  const sent = requestFor(first);
  expect(sent.system).toBe(
    'You write reports.\n\n' +
      `${SKILLS_PREAMBLE}\n\n` +
      `${block('house-style', 1, 'House style', 'How we write', 'Write in British English.')}\n\n` +
      block('web-research', 1, 'Web research', 'Finds sources', '# Research\nCite every source.')
  );
  // The agent's workspace file tools are still offered beside the skills.
  expect((sent.tools as { name: string }[]).map((t) => t.name)).toEqual(['list_files', 'read_file', 'write_file']);

  // A new version of a skill reaches the next execution; so does a new order.
  await api.patch(`/skills/${research.id}`, { prompt: 'Cite every source, with its date.' });
  await api.patch(`/agents/${agent}`, { skillIds: [research.id, style.id] });
  const second = `second ${randomBytes(4).toString('hex')}`;
  await api.post(`/agents/${agent}/execute`, { message: second });
  expect(requestFor(second).system).toBe(
    'You write reports.\n\n' +
      `${SKILLS_PREAMBLE}\n\n` +
      `${block('web-research', 2, 'Web research', 'Finds sources', 'Cite every source, with its date.')}\n\n` +
      block('house-style', 1, 'House style', 'How we write', 'Write in British English.')
  );

  // A deleted skill is detached: the next execution has the other one only; without skills, the prompt alone.
  await api.del(`/skills/${style.id}`);
  const third = `third ${randomBytes(4).toString('hex')}`;
  await api.post(`/agents/${agent}/execute`, { message: third });
  expect(requestFor(third).system).toBe(
    'You write reports.\n\n' +
      `${SKILLS_PREAMBLE}\n\n` +
      block('web-research', 2, 'Web research', 'Finds sources', 'Cite every source, with its date.')
  );
  await api.patch(`/agents/${agent}`, { skillIds: [] });
  const fourth = `fourth ${randomBytes(4).toString('hex')}`;
  await api.post(`/agents/${agent}/execute`, { message: fourth });
  expect(requestFor(fourth).system).toBe('You write reports.');
}, 60_000);

it('a job’s iteration gets the skills, then the job protocol', async () => {
  const org = await buildOrg();
  const skill = (await v1As(stack.t, org.apiToken).post('/skills', { name: 'checklist', prompt: 'Use a checklist.' }))
    .body.skill;
  const api = currentAs(stack.t, org.serviceToken);
  const agent = (await api.post('/agents', { name: 'Worker', system_prompt: 'You work.', skill_ids: [skill.id] })).body
    .agent.id;
  const goal = `goal ${randomBytes(4).toString('hex')}`;
  const workspace = (await api.post('/workspaces', { name: 'Jobs' })).body.workspace.id;
  const created = await api.post('/jobs', { agent_id: agent, workspace_id: workspace, goal });
  expect(created.status).toBe(201);
  const job = created.body.job;
  for (let i = 0; i < 200 && stack.fake.requests.every((r) => !JSON.stringify(r.messages).includes(goal)); i++)
    await new Promise((r) => setTimeout(r, 100));
  const system = requestFor(goal).system as string;
  expect(system.startsWith(`You work.\n\n${SKILLS_PREAMBLE}\n\n<skill name="checklist" version="1"`)).toBe(true);
  expect(system.indexOf('Use a checklist.')).toBeLessThan(system.indexOf('[[request_review]]'));
  await api.post(`/jobs/${job.id}/cancel`, {});
}, 60_000);
