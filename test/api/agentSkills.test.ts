/**
 * Agents attach skills through `skillIds` (v1 create and PATCH) and `skill_ids` (the current surface's create and
 * PATCH): an unknown, deleted, other organization's (even public) or another member's private skill id is 400 naming
 * the field, before anything is stored; the ids are kept in the order sent. `advanced_tools` take the built-in
 * tool catalogue's names only. Restoring a library agent takes its skills and tools back to the library's (none).
 */
import { Agent } from '../../models';
import { useTestApp } from '../helpers/app';
import { currentAs } from '../helpers/current';
import { buildMember, buildOrg } from '../helpers/factories';
import { useTestDatabase } from '../helpers/mongo';
import { v1As, v1Error } from '../helpers/v1';

useTestDatabase();
const t = useTestApp();

async function skill(token: string, name: string, body: object = {}): Promise<string> {
  const res = await v1As(t, token).post('/skills', { name, prompt: `Prompt of ${name}`, ...body });
  expect(res.status).toBe(200);
  return res.body.skill.id;
}

/** An organization with two usable skills and, around it, every kind of skill id it may not use. */
async function setup() {
  const org = await buildOrg();
  const member = await buildMember(org.organizationId);
  const other = await buildOrg();
  const a = await skill(org.apiToken, 'a');
  const b = await skill(org.apiToken, 'b');
  const deleted = await skill(org.apiToken, 'gone');
  await v1As(t, org.apiToken).del(`/skills/${deleted}`);
  const bad: Record<string, string> = {
    unknown: 'skl_doesnotexist',
    deleted,
    foreign: await skill(other.apiToken, 'theirs'),
    foreignPublic: await skill(other.apiToken, 'theirs-public', { visibility: 'public' }),
    othersPrivate: await skill(member.apiToken, 'members-own', { visibility: 'private' }),
  };
  return { org, a, b, bad };
}

describe('v1 surface', () => {
  it('create and PATCH keep the skills in the order sent; every unusable id is 400 naming skillIds, nothing stored', async () => {
    const { org, a, b, bad } = await setup();
    const api = v1As(t, org.apiToken);
    const created = await api.post('/agents', { name: 'A', systemPrompt: 'x', skillIds: [b, a] });
    expect(created.status).toBe(200);
    const id = created.body.id as string;
    expect((await api.get(`/agents/${id}`)).body.agent.skillIds).toEqual([b, a]);
    for (const [kind, bogus] of Object.entries(bad)) {
      const made = await api.post('/agents', { name: `bad ${kind}`, systemPrompt: 'x', skillIds: [a, bogus] });
      expect([kind, made.body]).toEqual([
        kind,
        v1Error(400, 'Bad Request', `Invalid skillIds: skill ${bogus} not found`),
      ]);
      const patched = await api.patch(`/agents/${id}`, { skillIds: [bogus], name: 'renamed' });
      expect([kind, patched.status, patched.body.message]).toEqual([
        kind,
        400,
        `Invalid skillIds: skill ${bogus} not found`,
      ]);
    }
    expect(await Agent.countDocuments({ organizationId: org.organizationId })).toBe(1);
    expect((await api.get(`/agents/${id}`)).body.agent).toMatchObject({ name: 'A', skillIds: [b, a] });

    expect((await api.patch(`/agents/${id}`, { skillIds: [a] })).status).toBe(200);
    expect((await api.get(`/agents/${id}`)).body.agent.skillIds).toEqual([a]);
    expect((await api.patch(`/agents/${id}`, { skillIds: [] })).status).toBe(200);
    expect((await api.get(`/agents/${id}`)).body.agent.skillIds).toEqual([]);
    expect((await api.patch(`/agents/${id}`, { skillIds: [a, a] })).body.message).toBe(
      'Field skillIds must not list an item twice'
    );
    expect(
      (await api.patch(`/agents/${id}`, { skillIds: Array.from({ length: 21 }, (_, i) => `skl_${i}`) })).body.message
    ).toBe('Field skillIds must have at most 20 items');
  });

  it('advanced_tools take built-in tool names only', async () => {
    const org = await buildOrg();
    const api = v1As(t, org.apiToken);
    const bad = await api.post('/agents', { name: 'A', systemPrompt: 'x', advanced_tools: ['web'] });
    expect(bad.body).toEqual(
      v1Error(
        400,
        'Bad Request',
        'Invalid advanced_tools.0: not a built-in tool (known: list_files, read_file, write_file)'
      )
    );
    const id = (await api.post('/agents', { name: 'A', systemPrompt: 'x', advanced_tools: ['write_file'] })).body.id;
    expect((await api.patch(`/agents/${id}`, { advanced_tools: ['shell'] })).status).toBe(400);
    expect((await api.patch(`/agents/${id}`, { advanced_tools: ['read_file'] })).status).toBe(200);
    expect((await api.get(`/agents/${id}`)).body.agent.advanced_tools).toEqual(['read_file']);
  });

  it('another organization’s PATCH with skillIds is 404 for the agent, not a verdict on the skills', async () => {
    const { org, a } = await setup();
    const other = await buildOrg();
    const id = (await v1As(t, org.apiToken).post('/agents', { name: 'A', systemPrompt: 'x' })).body.id;
    const res = await v1As(t, other.apiToken).patch(`/agents/${id}`, { skillIds: [a] });
    expect(res.body).toEqual(v1Error(404, 'Not Found', 'Agent not found'));
  });
});

describe('current surface', () => {
  it('create and PATCH take skill_ids and advanced_tools; every unusable id is 400 naming skill_ids', async () => {
    const { org, a, b, bad } = await setup();
    const api = currentAs(t, org.serviceToken);
    const created = await api.post('/agents', {
      name: 'A',
      system_prompt: 'x',
      skill_ids: [a, b],
      advanced_tools: ['list_files'],
    });
    expect(created.status).toBe(201);
    expect(created.body.agent).toMatchObject({ skill_ids: [a, b], advanced_tools: ['list_files'] });
    const id = created.body.agent.id as string;
    for (const [kind, bogus] of Object.entries(bad)) {
      const made = await api.post('/agents', { name: `bad ${kind}`, system_prompt: 'x', skill_ids: [bogus] });
      expect([kind, made.status, made.body]).toEqual([
        kind,
        400,
        { error: { code: 'validation_failed', message: `Invalid skill_ids: skill ${bogus} not found` } },
      ]);
      const patched = await api.patch(`/agents/${id}`, { skill_ids: [b, bogus] });
      expect([kind, patched.status, patched.body.error.message]).toEqual([
        kind,
        400,
        `Invalid skill_ids: skill ${bogus} not found`,
      ]);
    }
    expect(await Agent.countDocuments({ organizationId: org.organizationId })).toBe(1);
    const patched = await api.patch(`/agents/${id}`, { skill_ids: [b], advanced_tools: [] });
    expect(patched.body.agent).toMatchObject({ skill_ids: [b], advanced_tools: [] });
    expect((await v1As(t, org.apiToken).get(`/agents/${id}`)).body.agent.skillIds).toEqual([b]);
    expect((await api.patch(`/agents/${id}`, { advanced_tools: ['rm'] })).body.error.message).toMatch(
      /^Invalid advanced_tools\.0: not a built-in tool/
    );
  });

  it('a library agent takes skills like any agent; restore takes them back to the library’s (none)', async () => {
    const { org, a } = await setup();
    const api = currentAs(t, org.serviceToken);
    const id = `agt_lib_research-assistant_${org.organizationId}`;
    expect((await api.patch(`/agents/${id}/install-state`, { state: 'installed' })).status).toBe(200);
    expect((await api.patch(`/agents/${id}`, { skill_ids: [a], advanced_tools: ['read_file'] })).status).toBe(200);
    expect((await api.patch(`/agents/${id}/install-state`, { state: 'restore' })).status).toBe(200);
    const read = (await v1As(t, org.apiToken).get(`/agents/${id}`)).body.agent;
    expect([read.skillIds, read.advanced_tools]).toEqual([[], []]);
  });
});
