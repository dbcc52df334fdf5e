import { libraryAgentId, AGENT_LIBRARY } from '../../../commands/agentLibrary';
import { Agent, Chat, SpaceAgent } from '../../../models';
import { useTestApp } from '../../helpers/app';
import { currentAs, currentError } from '../../helpers/current';
import { buildMember, buildOrg } from '../../helpers/factories';
import { useTestDatabase } from '../../helpers/mongo';
import { v1As } from '../../helpers/v1';

useTestDatabase();
const t = useTestApp();

const prompt = { name: 'Helper', system_prompt: 'Be brief.' };

describe('POST /api/agents', () => {
  it('creates a private agent, visible to its creator on the v1 surface too', async () => {
    const org = await buildOrg();
    const res = await currentAs(t, org.serviceToken).post('/agents', { ...prompt, role: 'Writer', tags: ['a'] });
    expect(res.status).toBe(201);
    expect(res.body.agent).toMatchObject({
      name: 'Helper',
      role: 'Writer',
      system_prompt: 'Be brief.',
      visibility: 'private',
      source: 'organization',
      library_id: null,
      organization_id: org.organizationId,
      created_by: org.userId,
      model: null,
    });
    const id = res.body.agent.id;
    const v1 = await v1As(t, org.apiToken).get(`/agents/${id}`);
    expect(v1.status).toBe(200);
    expect(v1.body.agent).toMatchObject({ id, name: 'Helper', visibility: 'private', systemPrompt: 'Be brief.' });
    // private: another member does not see it on either surface
    const member = await buildMember(org.organizationId);
    expect((await v1As(t, member.apiToken).get(`/agents/${id}`)).status).toBe(404);
    const listed = await currentAs(t, member.serviceToken).get('/agents');
    expect(listed.body.agents.map((a: { id: string }) => a.id)).not.toContain(id);
  });

  it('400 validation_failed naming the missing field', async () => {
    const org = await buildOrg();
    const res = await currentAs(t, org.serviceToken).post('/agents', { name: 'No prompt' });
    expect(res.status).toBe(400);
    expect(res.body).toEqual(currentError('validation_failed', 'Missing required field: system_prompt'));
  });
});

describe('GET /api/agents', () => {
  it('lists the organization’s agents (v1-made ones included) and the library with install states', async () => {
    const org = await buildOrg();
    const made = await v1As(t, org.apiToken).post('/agents', { name: 'From v1', systemPrompt: 'x' });
    const other = await buildOrg();
    await v1As(t, other.apiToken).post('/agents', { name: 'Elsewhere', systemPrompt: 'x' });
    const res = await currentAs(t, org.serviceToken).get('/agents');
    expect(res.status).toBe(200);
    expect(res.body.agents.map((a: { id: string }) => a.id)).toEqual([made.body.id]);
    expect(res.body.total).toBe(1);
    expect(res.body.next_cursor).toBeNull();
    expect(res.body.library).toEqual(
      AGENT_LIBRARY.map((a) => ({
        id: libraryAgentId(org.organizationId, a.slug),
        library_id: a.slug,
        name: a.name,
        role: a.role,
        description: a.description,
        install_state: 'uninstalled',
      }))
    );
  });

  it('pages with limit and next_cursor', async () => {
    const org = await buildOrg();
    const api = currentAs(t, org.serviceToken);
    for (const name of ['a', 'b', 'c']) await api.post('/agents', { ...prompt, name });
    const first = await api.get('/agents?limit=2');
    expect(first.body.agents.map((a: { name: string }) => a.name)).toEqual(['c', 'b']);
    const next = await api.get(`/agents?limit=2&cursor=${first.body.next_cursor}`);
    expect(next.body.agents.map((a: { name: string }) => a.name)).toEqual(['a']);
    expect(next.body.next_cursor).toBeNull();
  });
});

describe('PATCH /api/agents/{id}', () => {
  it('updates the given fields, seen on v1', async () => {
    const org = await buildOrg();
    const api = currentAs(t, org.serviceToken);
    const { id } = (await api.post('/agents', prompt)).body.agent;
    const res = await api.patch(`/agents/${id}`, { name: 'Renamed', system_prompt: 'Be kind.', model: 'builtin' });
    expect(res.status).toBe(200);
    expect(res.body.agent).toMatchObject({ id, name: 'Renamed', system_prompt: 'Be kind.', model: 'builtin' });
    expect((await v1As(t, org.apiToken).get(`/agents/${id}`)).body.agent).toMatchObject({
      name: 'Renamed',
      systemPrompt: 'Be kind.',
    });
  });

  it('400 on an unknown field; 404 for an unknown id', async () => {
    const org = await buildOrg();
    const api = currentAs(t, org.serviceToken);
    const { id } = (await api.post('/agents', prompt)).body.agent;
    const bad = await api.patch(`/agents/${id}`, { systemPrompt: 'camelCase is v1' });
    expect(bad.status).toBe(400);
    expect(bad.body).toEqual(currentError('validation_failed', 'Unknown field: systemPrompt'));
    const missing = await api.patch('/agents/agt_nope', { name: 'x' });
    expect(missing.status).toBe(404);
    expect(missing.body).toEqual(currentError('not_found', 'Agent not found'));
  });

  it('403 for a member changing another user’s agent', async () => {
    const org = await buildOrg();
    const made = await v1As(t, org.apiToken).post('/agents', { name: 'Shared', systemPrompt: 'x' });
    const member = await buildMember(org.organizationId);
    const res = await currentAs(t, member.serviceToken).patch(`/agents/${made.body.id}`, { name: 'Mine' });
    expect(res.status).toBe(403);
    expect(res.body.error.code).toBe('forbidden');
  });
});

describe('DELETE /api/agents/{id}', () => {
  it('deletes the caller’s own private agent (gone on v1 too)', async () => {
    const org = await buildOrg();
    const api = currentAs(t, org.serviceToken);
    const { id } = (await api.post('/agents', prompt)).body.agent;
    const res = await api.del(`/agents/${id}`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ id, deleted: true });
    expect((await v1As(t, org.apiToken).get(`/agents/${id}`)).status).toBe(404);
    expect((await api.del(`/agents/${id}`)).status).toBe(404);
  });

  it('409 for a library agent, explaining to uninstall it', async () => {
    const org = await buildOrg();
    const api = currentAs(t, org.serviceToken);
    const id = libraryAgentId(org.organizationId, AGENT_LIBRARY[0].slug);
    expect((await api.patch(`/agents/${id}/install-state`, { state: 'installed' })).status).toBe(200);
    const res = await api.del(`/agents/${id}`);
    expect(res.status).toBe(409);
    expect(res.body.error.code).toBe('conflict');
    expect(res.body.error.message).toMatch(/uninstall/);
  });

  it('403 for an agent that is not the caller’s own private agent', async () => {
    const org = await buildOrg();
    const made = await v1As(t, org.apiToken).post('/agents', { name: 'Org-wide', systemPrompt: 'x' });
    const res = await currentAs(t, org.serviceToken).del(`/agents/${made.body.id}`);
    expect(res.status).toBe(403);
    expect(res.body).toEqual(currentError('forbidden', 'Only your own private agents can be deleted'));
  });
});

describe('PATCH /api/agents/{id}/install-state', () => {
  it('installs (a real agent on both surfaces), uninstalls, installs again and restores', async () => {
    const org = await buildOrg();
    const api = currentAs(t, org.serviceToken);
    const lib = AGENT_LIBRARY[1];
    const id = libraryAgentId(org.organizationId, lib.slug);
    const installed = await api.patch(`/agents/${id}/install-state`, { state: 'installed' });
    expect(installed.status).toBe(200);
    expect(installed.body.agent).toMatchObject({ id, library_id: lib.slug, install_state: 'installed' });
    const listed = await api.get('/agents');
    expect(listed.body.agents).toEqual([expect.objectContaining({ id, source: 'library', library_id: lib.slug })]);
    expect(listed.body.library.find((e: { id: string }) => e.id === id).install_state).toBe('installed');
    expect((await v1As(t, org.apiToken).get(`/agents/${id}`)).body.agent.systemPrompt).toBe(lib.systemPrompt);

    await api.patch(`/agents/${id}`, { name: 'Our editor' });
    const un = await api.patch(`/agents/${id}/install-state`, { state: 'uninstalled' });
    expect(un.body.agent.install_state).toBe('uninstalled');
    expect((await api.get('/agents')).body.agents).toEqual([]);
    expect((await v1As(t, org.apiToken).get(`/agents/${id}`)).status).toBe(404);

    await api.patch(`/agents/${id}/install-state`, { state: 'installed' });
    expect((await api.get('/agents')).body.agents[0].name).toBe('Our editor'); // edits kept
    const restored = await api.patch(`/agents/${id}/install-state`, { state: 'restore' });
    expect(restored.body.agent.install_state).toBe('installed');
    expect((await api.get('/agents')).body.agents[0].name).toBe(lib.name);
  });

  it('concurrent installs create one agent', async () => {
    const org = await buildOrg();
    const api = currentAs(t, org.serviceToken);
    const id = libraryAgentId(org.organizationId, AGENT_LIBRARY[2].slug);
    const all = await Promise.all(
      Array.from({ length: 5 }, () => api.patch(`/agents/${id}/install-state`, { state: 'installed' }))
    );
    expect(all.map((r) => r.status)).toEqual([200, 200, 200, 200, 200]);
    expect((await api.get('/agents')).body.total).toBe(1);
    // The installs that lost the race took back the chats they had written with their copy; the winner's stays.
    const chats = await Chat.find({ organizationId: org.organizationId, agentId: id }).lean();
    expect(chats).toHaveLength(1);
    expect((await Agent.findById(id).lean())?.chatId).toBe(chats[0]._id);
    // And its entry in the default space, which every install wrote alike and none took back.
    expect(await SpaceAgent.countDocuments({ organizationId: org.organizationId, agentId: id })).toBe(1);
  });

  it('409 for an agent that is not a library agent; 400 for an unknown state; 403 for members', async () => {
    const org = await buildOrg();
    const api = currentAs(t, org.serviceToken);
    const { id } = (await api.post('/agents', prompt)).body.agent;
    const mine = await api.patch(`/agents/${id}/install-state`, { state: 'installed' });
    expect(mine.status).toBe(409);
    expect(mine.body).toEqual(currentError('conflict', 'Only library agents have an install state'));
    const libId = libraryAgentId(org.organizationId, AGENT_LIBRARY[0].slug);
    const bad = await api.patch(`/agents/${libId}/install-state`, { state: 'enabled' });
    expect(bad.status).toBe(400);
    expect(bad.body).toEqual(
      currentError('validation_failed', 'Invalid state. Must be: installed, uninstalled, restore')
    );
    const member = await buildMember(org.organizationId);
    const res = await currentAs(t, member.serviceToken).patch(`/agents/${libId}/install-state`, {
      state: 'installed',
    });
    expect(res.status).toBe(403);
  });
});
