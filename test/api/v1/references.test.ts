/**
 * Ids a record refers to are checked against the caller's organization before anything is stored (issue 30 point
 * 12): a space's assignedAgents and skillIds, an agent's ownerId; another organization's id is 400 in the v1 error
 * shape, and the record is left as it was.
 */
import { Agent, Space } from '../../../models';
import { useTestApp } from '../../helpers/app';
import { buildMember, buildOrg } from '../../helpers/factories';
import { useTestDatabase } from '../../helpers/mongo';
import { v1As, v1Error } from '../../helpers/v1';

useTestDatabase();
const t = useTestApp();
const as = (token: string): ReturnType<typeof v1As> => v1As(t, token);
const bad = (message: string): unknown[] => [400, v1Error(400, 'Bad Request', message)];

async function twoOrgs() {
  const [mine, other] = await Promise.all([buildOrg(), buildOrg()]);
  const theirAgent = (await as(other.apiToken).post('/agents', { name: 'Theirs', systemPrompt: 'x' })).body.id;
  const theirSkill = (await as(other.apiToken).post('/skills', { name: 'theirs', prompt: 'x' })).body.skill.id;
  expect([theirAgent, theirSkill]).toEqual([expect.stringMatching(/^agt_/), expect.any(String)]);
  return { mine, other, theirAgent, theirSkill };
}

describe('space references', () => {
  it("refuses another organization's agent in assignedAgents on create and update, storing nothing", async () => {
    const { mine, theirAgent } = await twoOrgs();
    const api = as(mine.apiToken);
    const created = await api.post('/spaces', { name: 'S', assignedAgents: [theirAgent] });
    expect([created.status, created.body]).toEqual(bad(`Invalid assignedAgents: agent ${theirAgent} not found`));
    expect(await Space.countDocuments({ organizationId: mine.organizationId, name: 'S' })).toBe(0);

    const own = (await api.post('/agents', { name: 'Mine', systemPrompt: 'x' })).body.id;
    const space = (await api.post('/spaces', { name: 'S', assignedAgents: [own] })).body.space;
    expect(space.assignedAgents).toEqual([own]);
    const patched = await api.patch(`/spaces/${space.id}`, { assignedAgents: [own, theirAgent] });
    expect([patched.status, patched.body]).toEqual(bad(`Invalid assignedAgents: agent ${theirAgent} not found`));
    expect((await Space.findById(space.id).lean())!.assignedAgents).toEqual([own]);
    expect((await api.get(`/spaces/${space.id}`)).body.space.assignedAgents).toEqual([own]);
  });

  it('refuses unknown and archived agents, and a private agent of another member', async () => {
    const { mine } = await twoOrgs();
    const member = await buildMember(mine.organizationId);
    const hidden = (await as(member.apiToken).post('/agents', { name: 'P', systemPrompt: 'x', visibility: 'private' }))
      .body.id;
    const archived = (await as(mine.apiToken).post('/agents', { name: 'A', systemPrompt: 'x' })).body.id;
    expect((await as(mine.apiToken).del(`/agents/${archived}`)).status).toBe(200);
    for (const id of ['agt_nope', archived, hidden]) {
      const res = await as(mine.apiToken).post('/spaces', { name: 'S', assignedAgents: [id] });
      expect([res.status, res.body]).toEqual(bad(`Invalid assignedAgents: agent ${id} not found`));
    }
  });

  it("refuses another organization's skill in skillIds on create and update", async () => {
    const { mine, theirSkill } = await twoOrgs();
    const api = as(mine.apiToken);
    const created = await api.post('/spaces', { name: 'S', skillIds: [theirSkill] });
    expect([created.status, created.body]).toEqual(bad(`Invalid skillIds: skill ${theirSkill} not found`));
    const space = (await api.post('/spaces', { name: 'S' })).body.space;
    const patched = await api.patch(`/spaces/${space.id}`, { skillIds: [theirSkill] });
    expect([patched.status, patched.body]).toEqual(bad(`Invalid skillIds: skill ${theirSkill} not found`));
    expect((await Space.findById(space.id).lean())!.skillIds).toEqual([]);
  });
});

describe('agent references', () => {
  it("refuses another organization's user as ownerId; a member of the organization is accepted", async () => {
    const { mine, other } = await twoOrgs();
    const api = as(mine.apiToken);
    const res = await api.post('/agents', { name: 'X', systemPrompt: 'x', ownerId: other.userId });
    expect([res.status, res.body]).toEqual(bad(`Invalid ownerId: user ${other.userId} not found`));
    expect(await Agent.countDocuments({ organizationId: mine.organizationId, name: 'X' })).toBe(0);

    const member = await buildMember(mine.organizationId);
    const ok = await api.post('/agents', { name: 'Y', systemPrompt: 'x', ownerId: member.userId });
    expect(ok.status).toBe(200);
    expect((await api.get(`/agents/${ok.body.id}`)).body.agent.ownerId).toBe(member.userId);
  });
});
