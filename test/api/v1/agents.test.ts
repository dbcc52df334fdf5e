import { Agent, Chat } from '../../../models';
import { useTestApp } from '../../helpers/app';
import { buildMember, buildOrg } from '../../helpers/factories';
import { useTestDatabase } from '../../helpers/mongo';
import { v1As, v1Error } from '../../helpers/v1';

useTestDatabase();
const t = useTestApp();

const as = (token: string): ReturnType<typeof v1As> => v1As(t, token);

async function createAgent(token: string, body: object = {}): Promise<string> {
  const res = await as(token).post('/agents', { name: 'Helper', systemPrompt: 'Be helpful.', ...body });
  expect(res.status).toBe(200);
  return res.body.id;
}

describe('POST /api/v1/agents', () => {
  it('creates an agent with defaults and a real space and chat behind chatUrl', async () => {
    const org = await buildOrg();
    const res = await as(org.apiToken).post('/agents', { name: 'Researcher', systemPrompt: 'You research.' });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      success: true,
      id: expect.stringMatching(/^agt_/),
      name: 'Researcher',
      status: 'active',
      chatUrl: expect.any(String),
    });
    const [, orgId, spaces, spaceId, chats, chatId] = res.body.chatUrl.split('/');
    expect([orgId, spaces, chats]).toEqual([org.organizationId, 'spaces', 'chats']);
    const chat = await Chat.findById(chatId).lean();
    expect(chat).toMatchObject({ organizationId: org.organizationId, spaceId, agentId: res.body.id });
    const space = await as(org.apiToken).get(`/spaces/${spaceId}`);
    expect(space.body.space).toMatchObject({
      organizationId: org.organizationId,
      isDefault: true,
      chatCount: 1,
      assignedAgents: [res.body.id],
    });

    const read = await as(org.apiToken).get(`/agents/${res.body.id}`);
    expect(read.status).toBe(200);
    expect(read.body.agent).toMatchObject({
      id: res.body.id,
      name: 'Researcher',
      role: 'Assistant',
      systemPrompt: 'You research.',
      visibility: 'organization',
      organizationId: org.organizationId,
      userId: org.userId,
      archived: false,
    });
    expect(read.body.agent.createdAt).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    expect(read.body.agent).not.toHaveProperty('model');
  });

  it('agents created at once each count in the default space (no increment lost)', async () => {
    const org = await buildOrg();
    const made = await Promise.all(
      Array.from({ length: 8 }, (_, i) => as(org.apiToken).post('/agents', { name: `A${i}`, systemPrompt: 'x' }))
    );
    expect(made.map((r) => r.status)).toEqual(Array(8).fill(200));
    const spaceId = made[0].body.chatUrl.split('/')[3];
    const space = await as(org.apiToken).get(`/spaces/${spaceId}`);
    expect(space.body.space.chatCount).toBe(8);
    expect([...space.body.space.assignedAgents].sort()).toEqual(made.map((r) => r.body.id).sort());
  });

  it('stores model, the client-record fields and the system_message alias', async () => {
    const org = await buildOrg();
    const skill = (await as(org.apiToken).post('/skills', { name: 's1', prompt: 'p' })).body.skill.id;
    const id = await createAgent(org.apiToken, {
      systemPrompt: undefined,
      system_message: 'Alias prompt',
      role: 'Analyst',
      visibility: 'public',
      model: 'claude-sonnet-4-5',
      initialGreeting: 'Hi!',
      image: 'https://example.com/a.png',
      color: '#ff0000',
      skillIds: [skill],
      advanced_tools: ['read_file'],
      tags: ['research', 'beta'],
    });
    const { agent } = (await as(org.apiToken).get(`/agents/${id}`)).body;
    expect(agent).toMatchObject({
      systemPrompt: 'Alias prompt',
      role: 'Analyst',
      visibility: 'public',
      model: 'claude-sonnet-4-5',
      initialGreeting: 'Hi!',
      image: 'https://example.com/a.png',
      color: '#ff0000',
      skillIds: [skill],
      advanced_tools: ['read_file'],
      tags: ['research', 'beta'],
    });
  });

  it('takes maxConcurrentExecutions on create (1 to 1000, or null); 400 outside it, nothing stored', async () => {
    const org = await buildOrg();
    const limited = await createAgent(org.apiToken, { maxConcurrentExecutions: 3 });
    expect((await as(org.apiToken).get(`/agents/${limited}`)).body.agent.maxConcurrentExecutions).toBe(3);
    const unlimited = await createAgent(org.apiToken, { maxConcurrentExecutions: null });
    expect((await as(org.apiToken).get(`/agents/${unlimited}`)).body.agent.maxConcurrentExecutions).toBeNull();
    const before = await Agent.countDocuments({ organizationId: org.organizationId });
    for (const bad of [0, 1001, 1.5, '2']) {
      const res = await as(org.apiToken).post('/agents', {
        name: 'A',
        systemPrompt: 'x',
        maxConcurrentExecutions: bad,
      });
      expect(res.status).toBe(400);
      expect(res.body.message).toMatch(/maxConcurrentExecutions/);
    }
    expect(await Agent.countDocuments({ organizationId: org.organizationId })).toBe(before);
  });

  it('400 Missing required field for name, then systemPrompt (also when empty)', async () => {
    const org = await buildOrg();
    expect((await as(org.apiToken).post('/agents', {})).body).toEqual(
      v1Error(400, 'Bad Request', 'Missing required field: name')
    );
    expect((await as(org.apiToken).post('/agents', { systemPrompt: 'x' })).body.message).toBe(
      'Missing required field: name'
    );
    expect((await as(org.apiToken).post('/agents', { name: 'A' })).body).toEqual(
      v1Error(400, 'Bad Request', 'Missing required field: systemPrompt')
    );
    expect((await as(org.apiToken).post('/agents', { name: '', systemPrompt: 'x' })).body.message).toBe(
      'Missing required field: name'
    );
    expect((await as(org.apiToken).post('/agents', { name: 'A', systemPrompt: '' })).body.message).toBe(
      'Missing required field: systemPrompt'
    );
  });

  it('400 with the spec message for an invalid visibility', async () => {
    const org = await buildOrg();
    const res = await as(org.apiToken).post('/agents', { name: 'A', systemPrompt: 'x', visibility: 'secret' });
    expect(res.status).toBe(400);
    expect(res.body).toEqual(
      v1Error(400, 'Bad Request', 'Invalid visibility value. Must be: private, organization, public, or unlisted')
    );
  });

  it('400 for wrong types, Mongo operators and unknown fields; nothing is stored', async () => {
    const org = await buildOrg();
    const cases: Array<[object, string]> = [
      [{ name: { $gt: '' }, systemPrompt: 'x' }, 'Invalid type for field: name (expected string)'],
      [{ name: 'A', systemPrompt: { $ne: null } }, 'Invalid type for field: systemPrompt (expected string)'],
      [{ name: 42, systemPrompt: 'x' }, 'Invalid type for field: name (expected string)'],
      [{ name: 'A', systemPrompt: 'x', tags: 'one' }, 'Invalid type for field: tags (expected array)'],
      [{ name: 'A', systemPrompt: 'x', organizationId: 'org_other' }, 'Unknown field: organizationId'],
      [{ name: 'x'.repeat(201), systemPrompt: 'x' }, 'Field name must be at most 200 characters'],
    ];
    for (const [body, message] of cases) {
      const res = await as(org.apiToken).post('/agents', body);
      expect(res.status).toBe(400);
      expect(res.body.message).toBe(message);
    }
    const arr = await as(org.apiToken).post('/agents', [1, 2]);
    expect(arr.status).toBe(400);
    expect(arr.body.message).toBe('Invalid type for field: (body) (expected object)');
    expect(await Agent.countDocuments({ organizationId: org.organizationId })).toBe(0);
  });

  it('401 without a token', async () => {
    const res = await t.request.post('/api/v1/agents').send({ name: 'A', systemPrompt: 'x' });
    expect(res.status).toBe(401);
    expect(res.body).toEqual(v1Error(401, 'Unauthorized', 'Authorization header required'));
  });
});

describe('GET /api/v1/agents', () => {
  it('empty list gives agents [] and total 0', async () => {
    const org = await buildOrg();
    const res = await as(org.apiToken).get('/agents');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ success: true, agents: [], total: 0, nextCursor: null });
  });

  it('lists newest first, pages with limit/cursor, total stays the full count', async () => {
    const org = await buildOrg();
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push(await createAgent(org.apiToken, { name: `A${i}` }));
    const first = await as(org.apiToken).get('/agents?limit=2');
    expect(first.body.total).toBe(5);
    expect(first.body.agents.map((a: { id: string }) => a.id)).toEqual([ids[4], ids[3]]);
    const second = await as(org.apiToken).get(`/agents?limit=2&cursor=${first.body.nextCursor}`);
    expect(second.body.agents.map((a: { id: string }) => a.id)).toEqual([ids[2], ids[1]]);
    const third = await as(org.apiToken).get(`/agents?limit=2&cursor=${second.body.nextCursor}`);
    expect(third.body.agents.map((a: { id: string }) => a.id)).toEqual([ids[0]]);
    expect(third.body.nextCursor).toBeNull();
  });

  it('400 for a bad limit or cursor', async () => {
    const org = await buildOrg();
    expect((await as(org.apiToken).get('/agents?limit=0')).body.message).toBe('Field limit must be >= 1');
    expect((await as(org.apiToken).get('/agents?limit=1001')).body.message).toBe('Field limit must be <= 1000');
    expect((await as(org.apiToken).get('/agents?limit=ten')).body.message).toBe(
      'Invalid type for field: limit (expected integer)'
    );
    expect((await as(org.apiToken).get('/agents?cursor=garbage')).body.message).toBe('Invalid cursor');
  });
});

describe('visibility across organizations and users', () => {
  it('private: creator only; organization: members; public/unlisted: anyone with the id, listed only at home', async () => {
    const home = await buildOrg();
    const member = await buildMember(home.organizationId);
    const other = await buildOrg();
    const ids: Record<string, string> = {};
    for (const v of ['private', 'organization', 'public', 'unlisted'])
      ids[v] = await createAgent(home.apiToken, { name: v, visibility: v });

    const ownerList = (await as(home.apiToken).get('/agents')).body;
    expect(ownerList.total).toBe(4);
    const memberList = (await as(member.apiToken).get('/agents')).body;
    expect(memberList.agents.map((a: { name: string }) => a.name).sort()).toEqual([
      'organization',
      'public',
      'unlisted',
    ]);
    expect(memberList.total).toBe(3);
    expect((await as(other.apiToken).get('/agents')).body.total).toBe(0);

    expect((await as(member.apiToken).get(`/agents/${ids.private}`)).status).toBe(404);
    expect((await as(member.apiToken).get(`/agents/${ids.organization}`)).status).toBe(200);
    expect((await as(other.apiToken).get(`/agents/${ids.private}`)).body).toEqual(
      v1Error(404, 'Not Found', 'Agent not found')
    );
    expect((await as(other.apiToken).get(`/agents/${ids.organization}`)).status).toBe(404);
    expect((await as(other.apiToken).get(`/agents/${ids.public}`)).status).toBe(200);
    expect((await as(other.apiToken).get(`/agents/${ids.unlisted}`)).status).toBe(200);
  });

  it('another organization can never modify or delete; a plain member only their own agents', async () => {
    const home = await buildOrg();
    const member = await buildMember(home.organizationId);
    const other = await buildOrg();
    const pub = await createAgent(home.apiToken, { visibility: 'public' });
    const org = await createAgent(home.apiToken);
    const forbidden = v1Error(403, 'Forbidden', "You don't have permission to access this resource");
    expect((await as(other.apiToken).patch(`/agents/${pub}`, { name: 'x' })).body).toEqual(forbidden);
    expect((await as(other.apiToken).del(`/agents/${pub}`)).status).toBe(403);
    expect((await as(other.apiToken).patch(`/agents/${org}`, { name: 'x' })).status).toBe(404);
    expect((await as(member.apiToken).patch(`/agents/${org}`, { name: 'x' })).body).toEqual(forbidden);
    const mine = await createAgent(member.apiToken);
    expect((await as(member.apiToken).patch(`/agents/${mine}`, { name: 'Mine' })).status).toBe(200);
    expect((await as(home.apiToken).patch(`/agents/${mine}`, { role: 'Owner edit' })).status).toBe(200);
  });
});

describe('PATCH /api/v1/agents/{id}', () => {
  it('updates only the given fields; omitted ones stay unchanged', async () => {
    const org = await buildOrg();
    const id = await createAgent(org.apiToken, { role: 'Writer', tags: ['t'] });
    const res = await as(org.apiToken).patch(`/agents/${id}`, { systemPrompt: 'New prompt', visibility: 'private' });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ success: true, message: 'Agent updated successfully' });
    const { agent } = (await as(org.apiToken).get(`/agents/${id}`)).body;
    expect(agent).toMatchObject({
      name: 'Helper',
      role: 'Writer',
      systemPrompt: 'New prompt',
      visibility: 'private',
      tags: ['t'],
    });
  });

  it('400 for an invalid visibility, an unknown field or an empty name', async () => {
    const org = await buildOrg();
    const id = await createAgent(org.apiToken);
    expect((await as(org.apiToken).patch(`/agents/${id}`, { visibility: 'everyone' })).body.message).toBe(
      'Invalid visibility value. Must be: private, organization, public, or unlisted'
    );
    expect((await as(org.apiToken).patch(`/agents/${id}`, { tags: ['x'] })).body.message).toBe('Unknown field: tags');
    expect((await as(org.apiToken).patch(`/agents/${id}`, { name: '' })).body.message).toBe(
      'Missing required field: name'
    );
  });

  it('404 Agent not found for an unknown id', async () => {
    const org = await buildOrg();
    const res = await as(org.apiToken).patch('/agents/agt_nope', { name: 'x' });
    expect(res.body).toEqual(v1Error(404, 'Not Found', 'Agent not found'));
  });
});

describe('DELETE /api/v1/agents/{id}', () => {
  it('archives: then 404 on read and update, excluded from lists, record kept', async () => {
    const org = await buildOrg();
    const id = await createAgent(org.apiToken);
    const keep = await createAgent(org.apiToken, { name: 'Keep' });
    const res = await as(org.apiToken).del(`/agents/${id}`);
    expect(res.body).toEqual({ success: true, message: 'Agent deleted successfully' });
    expect((await as(org.apiToken).get(`/agents/${id}`)).body).toEqual(v1Error(404, 'Not Found', 'Agent not found'));
    expect((await as(org.apiToken).patch(`/agents/${id}`, { name: 'x' })).status).toBe(404);
    expect((await as(org.apiToken).del(`/agents/${id}`)).status).toBe(404);
    const list = (await as(org.apiToken).get('/agents')).body;
    expect(list.agents.map((a: { id: string }) => a.id)).toEqual([keep]);
    expect(list.total).toBe(1);
    expect(await Agent.findById(id).lean()).toMatchObject({ archived: true, archivedAt: expect.any(Date) });
  });
});
