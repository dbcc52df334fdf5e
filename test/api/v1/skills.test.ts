/**
 * /api/v1/skills on the real servers: create with defaults, list (paged, total, category filter), read, update (a
 * new version per change, old versions readable and unchanged), delete (404 afterwards, name free again, agents
 * detached), the v1 validation errors, name uniqueness (also under concurrent creates and renames), visibility and
 * who may change a skill, and another organization's 404 on every route.
 */
import { Skill, SkillName, SkillVersion } from '../../../models';
import { useTestApp } from '../../helpers/app';
import { buildMember, buildOrg } from '../../helpers/factories';
import { useTestDatabase } from '../../helpers/mongo';
import { v1As, v1Error } from '../../helpers/v1';

useTestDatabase();
const t = useTestApp();

const as = (token: string): ReturnType<typeof v1As> => v1As(t, token);

async function createSkill(token: string, body: object = {}): Promise<Record<string, unknown> & { id: string }> {
  const res = await as(token).post('/skills', { name: 'web-research', prompt: 'Search, then cite.', ...body });
  expect(res.status).toBe(200);
  return res.body.skill;
}

describe('create and read', () => {
  it('creates version 1 with defaults; reads it back; the record has the spec’s fields', async () => {
    const org = await buildOrg();
    const skill = await createSkill(org.apiToken, { description: 'Finds sources' });
    expect(skill).toEqual({
      id: expect.stringMatching(/^skl_/),
      name: 'web-research',
      displayName: 'web-research',
      description: 'Finds sources',
      prompt: 'Search, then cite.',
      category: 'other',
      builtInTools: [],
      requiredMCPs: [],
      visibility: 'organization',
      version: 1,
      organizationId: org.organizationId,
      ownerId: org.userId,
      createdAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
      updatedAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
    });
    const read = await as(org.apiToken).get(`/skills/${skill.id}`);
    expect(read.status).toBe(200);
    expect(read.body).toEqual({ success: true, skill });

    const full = await createSkill(org.apiToken, {
      name: 'csv-analyst',
      displayName: 'CSV analyst',
      prompt: '# Analyse\nRead the CSV files first.',
      category: 'data',
      builtInTools: ['read_file', 'list_files'],
      requiredMCPs: ['warehouse', 'bi-tools-2'],
      visibility: 'private',
    });
    expect(full).toMatchObject({
      displayName: 'CSV analyst',
      category: 'data',
      builtInTools: ['read_file', 'list_files'],
      requiredMCPs: ['warehouse', 'bi-tools-2'],
      visibility: 'private',
    });
  });

  it('400 in the v1 shape for every invalid field; nothing is stored', async () => {
    const org = await buildOrg();
    const cases: Array<[object, string]> = [
      [{ prompt: 'x' }, 'Missing required field: name'],
      [{ name: 'a' }, 'Missing required field: prompt'],
      [{ name: 'a', prompt: '' }, 'Missing required field: prompt'],
      [
        { name: 'Web Research', prompt: 'x' },
        'Invalid name: a skill name is kebab-case (lowercase letters and digits, words joined by single hyphens, e.g. web-research)',
      ],
      [{ name: 'web--research', prompt: 'x' }, expect.stringMatching(/^Invalid name: a skill name is kebab-case/)],
      [{ name: '-web', prompt: 'x' }, expect.stringMatching(/^Invalid name: /)],
      [{ name: 'x'.repeat(65), prompt: 'x' }, 'Field name must be at most 64 characters'],
      [
        { name: 'a', prompt: 'x', category: 'science' },
        'Invalid category. Must be: research, writing, data, code, marketing, productivity, file-handling, other',
      ],
      [
        { name: 'a', prompt: 'x', visibility: 'unlisted' },
        'Invalid visibility value. Must be: private, organization, or public',
      ],
      [
        { name: 'a', prompt: 'x', builtInTools: ['web_search'] },
        'Invalid builtInTools.0: not a built-in tool (known: list_files, read_file, write_file)',
      ],
      [
        { name: 'a', prompt: 'x', builtInTools: ['read_file', 'read_file'] },
        'Field builtInTools must not list an item twice',
      ],
      [
        { name: 'a', prompt: 'x', requiredMCPs: ['ok', 'Bad_Name'] },
        expect.stringMatching(/^Invalid requiredMCPs\.1: an MCP server name is kebab-case/),
      ],
      [{ name: 'a', prompt: 'x'.repeat(20_001) }, 'Field prompt must be at most 20000 characters'],
      [{ name: 'a', prompt: 'x', version: 7 }, 'Unknown field: version'],
      [{ name: { $gt: '' }, prompt: 'x' }, 'Invalid type for field: name (expected string)'],
    ];
    for (const [body, message] of cases) {
      const res = await as(org.apiToken).post('/skills', body);
      expect([res.status, res.body]).toEqual([400, v1Error(400, 'Bad Request', message as string)]);
    }
    expect(await Skill.countDocuments({ organizationId: org.organizationId })).toBe(0);
    expect(await SkillName.countDocuments({ organizationId: org.organizationId })).toBe(0);
  });

  it('a name is unique in the organization: 409, also for creates at the same moment; other organizations may reuse it', async () => {
    const org = await buildOrg();
    await createSkill(org.apiToken);
    const dup = await as(org.apiToken).post('/skills', { name: 'web-research', prompt: 'other' });
    expect(dup.body).toEqual(v1Error(409, 'Conflict', 'A skill named web-research already exists in the organization'));
    const racing = await Promise.all(
      Array.from({ length: 6 }, (_, i) => as(org.apiToken).post('/skills', { name: 'same-time', prompt: `p${i}` }))
    );
    expect(racing.map((r) => r.status).sort()).toEqual([200, 409, 409, 409, 409, 409]);
    expect(await Skill.countDocuments({ organizationId: org.organizationId, name: 'same-time' })).toBe(1);
    const other = await buildOrg();
    await createSkill(other.apiToken);
  });

  it('a reservation left by a crash is taken over: at once for a deleted skill, after a minute for a missing one', async () => {
    const org = await buildOrg();
    const gone = await createSkill(org.apiToken, { name: 'gone' });
    // A crash after the delete, before the name's release: the reservation still names the deleted skill.
    await Skill.updateOne({ _id: gone.id }, { $set: { deletedAt: new Date() } });
    expect(await SkillName.countDocuments({ skillId: gone.id })).toBe(1);
    expect((await as(org.apiToken).post('/skills', { name: 'gone', prompt: 'x' })).status).toBe(200);
    // A crash between the reservation and the skill's insert: a recent one may be a create in flight.
    const _id = `${org.organizationId}:never-written`;
    await SkillName.create({ _id, organizationId: org.organizationId, skillId: 'skl_never' });
    expect((await as(org.apiToken).post('/skills', { name: 'never-written', prompt: 'x' })).status).toBe(409);
    await SkillName.collection.updateOne({ _id } as never, { $set: { createdAt: new Date(Date.now() - 61_000) } });
    expect((await as(org.apiToken).post('/skills', { name: 'never-written', prompt: 'x' })).status).toBe(200);
  });
});

describe('list', () => {
  it('newest first, paged with a total, filtered by category; 400 for a bad category', async () => {
    const org = await buildOrg();
    const ids: string[] = [];
    for (let i = 0; i < 5; i++)
      ids.push((await createSkill(org.apiToken, { name: `s-${i}`, category: i % 2 ? 'code' : 'writing' })).id);
    const first = (await as(org.apiToken).get('/skills?limit=2')).body;
    expect([first.total, first.skills.map((s: { id: string }) => s.id)]).toEqual([5, [ids[4], ids[3]]]);
    const second = (await as(org.apiToken).get(`/skills?limit=2&cursor=${first.nextCursor}`)).body;
    expect(second.skills.map((s: { id: string }) => s.id)).toEqual([ids[2], ids[1]]);
    const code = (await as(org.apiToken).get('/skills?category=code')).body;
    expect([code.total, code.skills.map((s: { id: string }) => s.id)]).toEqual([2, [ids[3], ids[1]]]);
    const bad = await as(org.apiToken).get('/skills?category=science');
    expect(bad.body.message).toMatch(/^Invalid category\. Must be: research/);
    expect((await as((await buildOrg()).apiToken).get('/skills')).body).toEqual({
      success: true,
      skills: [],
      total: 0,
      nextCursor: null,
    });
  });
});

describe('update and versions', () => {
  it('each change makes a new version; old versions stay readable as they were; no change makes none', async () => {
    const org = await buildOrg();
    const v1 = await createSkill(org.apiToken, { description: 'first' });
    const patched = await as(org.apiToken).patch(`/skills/${v1.id}`, { prompt: 'Search twice, then cite.' });
    expect(patched.status).toBe(200);
    expect(patched.body.skill).toMatchObject({ version: 2, prompt: 'Search twice, then cite.', description: 'first' });
    const renamed = (await as(org.apiToken).patch(`/skills/${v1.id}`, { name: 'deep-research', category: 'research' }))
      .body.skill;
    expect(renamed).toMatchObject({ version: 3, name: 'deep-research', category: 'research' });
    // Nothing changes: no version.
    const same = await as(org.apiToken).patch(`/skills/${v1.id}`, { category: 'research' });
    expect(same.body.skill.version).toBe(3);
    expect((await as(org.apiToken).patch(`/skills/${v1.id}`, {})).body.skill.version).toBe(3);
    expect((await as(org.apiToken).get(`/skills/${v1.id}`)).body.skill).toMatchObject({
      version: 3,
      name: 'deep-research',
    });

    const versions = (await as(org.apiToken).get(`/skills/${v1.id}/versions`)).body;
    expect(versions.versions.map((v: { version: number }) => v.version)).toEqual([3, 2, 1]);
    expect(versions.nextCursor).toBeNull();
    const old = (await as(org.apiToken).get(`/skills/${v1.id}/versions/1`)).body;
    expect(old).toEqual({
      success: true,
      version: {
        skillId: v1.id,
        version: 1,
        name: 'web-research',
        displayName: 'web-research',
        description: 'first',
        prompt: 'Search, then cite.',
        category: 'other',
        builtInTools: [],
        requiredMCPs: [],
        visibility: 'organization',
        organizationId: org.organizationId,
        ownerId: org.userId,
        createdBy: org.userId,
        createdAt: expect.any(String),
      },
    });
    const page = (await as(org.apiToken).get(`/skills/${v1.id}/versions?limit=2`)).body;
    expect(page.versions.map((v: { version: number }) => v.version)).toEqual([3, 2]);
    const rest = (await as(org.apiToken).get(`/skills/${v1.id}/versions?limit=2&cursor=${page.nextCursor}`)).body;
    expect([rest.versions.map((v: { version: number }) => v.version), rest.nextCursor]).toEqual([[1], null]);
    expect((await as(org.apiToken).get(`/skills/${v1.id}/versions?cursor=x`)).body.message).toBe('Invalid cursor');
    expect((await as(org.apiToken).get(`/skills/${v1.id}/versions/4`)).body).toEqual(
      v1Error(404, 'Not Found', 'Skill version not found')
    );
    expect((await as(org.apiToken).get(`/skills/${v1.id}/versions/zero`)).status).toBe(400);

    // The old name is free again; the new one is taken.
    await createSkill(org.apiToken, { name: 'web-research' });
    const taken = await as(org.apiToken).post('/skills', { name: 'deep-research', prompt: 'x' });
    expect(taken.status).toBe(409);
  });

  it('concurrent updates each make their own version, none lost', async () => {
    const org = await buildOrg();
    const skill = await createSkill(org.apiToken);
    const results = await Promise.all(
      Array.from({ length: 4 }, (_, i) => as(org.apiToken).patch(`/skills/${skill.id}`, { description: `d${i}` }))
    );
    expect(results.map((r) => r.status)).toEqual([200, 200, 200, 200]);
    const versions = (await as(org.apiToken).get(`/skills/${skill.id}/versions`)).body.versions;
    expect(versions.map((v: { version: number }) => v.version)).toEqual([5, 4, 3, 2, 1]);
    expect(
      versions
        .slice(0, 4)
        .map((v: { description: string }) => v.description)
        .sort()
    ).toEqual(['d0', 'd1', 'd2', 'd3']);
    const head = (await as(org.apiToken).get(`/skills/${skill.id}`)).body.skill;
    expect([head.version, head.description]).toEqual([5, versions[0].description]);
  });

  it('a version written without its record moving (a crash between the two) is caught up by the next update', async () => {
    const org = await buildOrg();
    const skill = await createSkill(org.apiToken);
    const v1 = (await SkillVersion.findById(`${skill.id}:1`).lean())!;
    await SkillVersion.create({ ...v1, _id: `${skill.id}:2`, version: 2, description: 'written, then the crash' });
    const res = await as(org.apiToken).patch(`/skills/${skill.id}`, { prompt: 'after the crash' });
    expect(res.status).toBe(200);
    expect(res.body.skill).toMatchObject({
      version: 3,
      description: 'written, then the crash',
      prompt: 'after the crash',
    });
  });

  it('400 for invalid changes, 409 for a name another skill has; the skill is unchanged', async () => {
    const org = await buildOrg();
    const skill = await createSkill(org.apiToken);
    await createSkill(org.apiToken, { name: 'taken' });
    expect((await as(org.apiToken).patch(`/skills/${skill.id}`, { category: 'x' })).body.message).toMatch(
      /^Invalid category/
    );
    expect((await as(org.apiToken).patch(`/skills/${skill.id}`, { prompt: '' })).body.message).toBe(
      'Missing required field: prompt'
    );
    expect((await as(org.apiToken).patch(`/skills/${skill.id}`, { ownerId: 'usr_x' })).body.message).toBe(
      'Unknown field: ownerId'
    );
    const dup = await as(org.apiToken).patch(`/skills/${skill.id}`, { name: 'taken', prompt: 'new' });
    expect(dup.body).toEqual(v1Error(409, 'Conflict', 'A skill named taken already exists in the organization'));
    expect((await as(org.apiToken).get(`/skills/${skill.id}`)).body.skill).toEqual(skill);
    // Two skills renamed to one name at the same moment: one gets it.
    const other = await createSkill(org.apiToken, { name: 'other' });
    const renames = await Promise.all(
      [skill.id, other.id].map((id) => as(org.apiToken).patch(`/skills/${id}`, { name: 'wanted' }))
    );
    expect(renames.map((r) => r.status).sort()).toEqual([200, 409]);
    expect(await Skill.countDocuments({ organizationId: org.organizationId, name: 'wanted' })).toBe(1);
  });
});

describe('delete', () => {
  it('404 afterwards on every route, the name is free again, and agents no longer list it', async () => {
    const org = await buildOrg();
    const skill = await createSkill(org.apiToken);
    const keep = await createSkill(org.apiToken, { name: 'keep' });
    const agent = (
      await as(org.apiToken).post('/agents', { name: 'A', systemPrompt: 'x', skillIds: [skill.id, keep.id] })
    ).body.id;
    const res = await as(org.apiToken).del(`/skills/${skill.id}`);
    expect(res.body).toEqual({ success: true, message: 'Skill deleted successfully' });
    for (const r of [
      await as(org.apiToken).get(`/skills/${skill.id}`),
      await as(org.apiToken).patch(`/skills/${skill.id}`, { prompt: 'y' }),
      await as(org.apiToken).del(`/skills/${skill.id}`),
      await as(org.apiToken).get(`/skills/${skill.id}/versions`),
      await as(org.apiToken).get(`/skills/${skill.id}/versions/1`),
    ])
      expect(r.body).toEqual(v1Error(404, 'Not Found', 'Skill not found'));
    expect((await as(org.apiToken).get('/skills')).body.total).toBe(1);
    expect((await as(org.apiToken).get(`/agents/${agent}`)).body.agent.skillIds).toEqual([keep.id]);
    await createSkill(org.apiToken);
  });
});

describe('visibility and permissions', () => {
  it('private: its owner only; organization: members; public: readable by id elsewhere, listed only at home', async () => {
    const home = await buildOrg();
    const member = await buildMember(home.organizationId);
    const other = await buildOrg();
    const ids: Record<string, string> = {};
    for (const v of ['private', 'organization', 'public'])
      ids[v] = (await createSkill(home.apiToken, { name: `s-${v}`, visibility: v })).id;

    expect((await as(home.apiToken).get('/skills')).body.total).toBe(3);
    const memberList = (await as(member.apiToken).get('/skills')).body;
    expect(memberList.skills.map((s: { id: string }) => s.id).sort()).toEqual([ids.organization, ids.public].sort());
    expect((await as(member.apiToken).get(`/skills/${ids.private}`)).status).toBe(404);
    expect((await as(member.apiToken).get(`/skills/${ids.organization}`)).status).toBe(200);
    expect((await as(other.apiToken).get('/skills')).body.total).toBe(0);
    expect((await as(other.apiToken).get(`/skills/${ids.public}`)).status).toBe(200);
    expect((await as(other.apiToken).get(`/skills/${ids.public}/versions/1`)).status).toBe(200);
    // Read, never changed, from another organization.
    expect((await as(other.apiToken).patch(`/skills/${ids.public}`, { prompt: 'mine' })).status).toBe(403);
    expect((await as(other.apiToken).del(`/skills/${ids.public}`)).status).toBe(403);
  });

  it('a member may change only its own skills; owners and admins change any', async () => {
    const home = await buildOrg();
    const member = await buildMember(home.organizationId);
    const admin = await buildMember(home.organizationId, 'admin');
    const owners = (await createSkill(home.apiToken)).id;
    const members = (await createSkill(member.apiToken, { name: 'members' })).id;
    expect((await as(member.apiToken).patch(`/skills/${owners}`, { prompt: 'y' })).body).toEqual(
      v1Error(403, 'Forbidden', "You don't have permission to access this resource")
    );
    expect((await as(member.apiToken).del(`/skills/${owners}`)).status).toBe(403);
    expect((await as(member.apiToken).patch(`/skills/${members}`, { prompt: 'y' })).status).toBe(200);
    const byAdmin = await as(admin.apiToken).patch(`/skills/${members}`, { prompt: 'z' });
    expect(byAdmin.body.skill).toMatchObject({ version: 3, ownerId: member.userId });
    const v3 = (await as(admin.apiToken).get(`/skills/${members}/versions/3`)).body.version;
    expect([v3.ownerId, v3.createdBy]).toEqual([member.userId, admin.userId]);
    expect((await as(admin.apiToken).del(`/skills/${owners}`)).status).toBe(200);
  });

  it('another organization gets 404 on every route for an organization skill', async () => {
    const home = await buildOrg();
    const other = await buildOrg();
    const skill = await createSkill(home.apiToken);
    const them = as(other.apiToken);
    for (const r of [
      await them.get(`/skills/${skill.id}`),
      await them.patch(`/skills/${skill.id}`, { prompt: 'y' }),
      await them.del(`/skills/${skill.id}`),
      await them.get(`/skills/${skill.id}/versions`),
      await them.get(`/skills/${skill.id}/versions/1`),
    ])
      expect([r.status, r.body]).toEqual([404, v1Error(404, 'Not Found', 'Skill not found')]);
    expect((await as(home.apiToken).get(`/skills/${skill.id}`)).body.skill).toEqual(skill);
  });
});
