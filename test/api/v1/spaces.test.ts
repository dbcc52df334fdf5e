import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import mongoose from 'mongoose';
import { decryptSecret } from '../../../lib/crypto';
import { Space } from '../../../models';
import { useTestApp } from '../../helpers/app';
import { TEST_ENCRYPTION_KEY } from '../../helpers/env';
import { bearer, buildMember, buildOrg } from '../../helpers/factories';
import { useTestDatabase } from '../../helpers/mongo';
import { v1As, v1Error } from '../../helpers/v1';

useTestDatabase();
const t = useTestApp();
const as = (token: string): ReturnType<typeof v1As> => v1As(t, token);
const client = (token: string) => ({
  post: (p: string, body: object) => t.request.post(`/api${p}`).set('Authorization', bearer(token)).send(body),
  get: (p: string) => t.request.get(`/api${p}`).set('Authorization', bearer(token)),
});

describe('/api/v1/spaces CRUD', () => {
  it('creates, reads, lists, updates and deletes a space with the record fields', async () => {
    const org = await buildOrg();
    const skill = (await as(org.apiToken).post('/skills', { name: 'papers', prompt: 'Cite.' })).body.skill.id;
    const created = await as(org.apiToken).post('/spaces', {
      name: 'Research',
      description: 'Papers',
      skillIds: [skill],
    });
    expect(created.status).toBe(200);
    const space = created.body.space;
    expect(space).toMatchObject({
      id: expect.stringMatching(/^spc_/),
      organizationId: org.organizationId,
      name: 'Research',
      description: 'Papers',
      ownerId: org.userId,
      visibility: 'organization',
      assignedAgents: [],
      skillIds: [skill],
      pluginIds: [],
      chatCount: 0,
      fileCount: 0,
    });
    expect((await as(org.apiToken).get(`/spaces/${space.id}`)).body.space.name).toBe('Research');
    const list = (await as(org.apiToken).get('/spaces')).body;
    expect(list).toMatchObject({ success: true, total: 1, nextCursor: null });
    const updated = await as(org.apiToken).patch(`/spaces/${space.id}`, { name: 'Research 2', visibility: 'private' });
    expect(updated.body.space).toMatchObject({ name: 'Research 2', visibility: 'private', description: 'Papers' });
    expect((await as(org.apiToken).del(`/spaces/${space.id}`)).body).toEqual({
      success: true,
      message: 'Space deleted successfully',
    });
    expect((await as(org.apiToken).get(`/spaces/${space.id}`)).body).toEqual(
      v1Error(404, 'Not Found', 'Space not found')
    );
    expect((await as(org.apiToken).get('/spaces')).body.total).toBe(0);
  });

  it('assignedAgents: agents created in the space follow its own list; an update replaces the whole list', async () => {
    const org = await buildOrg();
    const a = await as(org.apiToken).post('/agents', { name: 'A', systemPrompt: 'x' });
    const b = await as(org.apiToken).post('/agents', { name: 'B', systemPrompt: 'x' });
    const spaceId = a.body.chatUrl.split('/')[3];
    const read = async (): Promise<string[]> =>
      (await as(org.apiToken).get(`/spaces/${spaceId}`)).body.space.assignedAgents;
    expect(await read()).toEqual([a.body.id, b.body.id]);
    const patched = await as(org.apiToken).patch(`/spaces/${spaceId}`, { assignedAgents: [b.body.id] });
    expect(patched.body).toMatchObject({ success: true });
    expect(await read()).toEqual([b.body.id]);
    expect((await as(org.apiToken).patch(`/spaces/${spaceId}`, { assignedAgents: [] })).status).toBe(200);
    expect(await read()).toEqual([]);
    const c = await as(org.apiToken).post('/agents', { name: 'C', systemPrompt: 'x' });
    expect(await read()).toEqual([c.body.id]);
  });

  it('400 for a missing name, invalid visibility, wrong types; 404 across organizations; 403 for other members', async () => {
    const org = await buildOrg();
    const member = await buildMember(org.organizationId);
    const other = await buildOrg();
    expect((await as(org.apiToken).post('/spaces', {})).body.message).toBe('Missing required field: name');
    expect((await as(org.apiToken).post('/spaces', { name: 'x', visibility: 'unlisted' })).body.message).toBe(
      'Invalid visibility value. Must be: private, organization, or public'
    );
    expect((await as(org.apiToken).post('/spaces', { name: 'x', pluginIds: [{ $gt: '' }] })).status).toBe(400);
    const id = (await as(org.apiToken).post('/spaces', { name: 'Mine' })).body.space.id;
    expect((await as(other.apiToken).get(`/spaces/${id}`)).status).toBe(404);
    expect((await as(other.apiToken).del(`/spaces/${id}`)).status).toBe(404);
    expect((await as(member.apiToken).get(`/spaces/${id}`)).status).toBe(200);
    expect((await as(member.apiToken).patch(`/spaces/${id}`, { name: 'x' })).status).toBe(403);
    const priv = (await as(org.apiToken).post('/spaces', { name: 'Private', visibility: 'private' })).body.space.id;
    expect((await as(member.apiToken).get(`/spaces/${priv}`)).status).toBe(404);
    expect((await as(member.apiToken).get('/spaces')).body.spaces.map((s: { id: string }) => s.id)).toEqual([id]);
  });
});

describe('POST /api/spaces/{spaceId}/init', () => {
  const dirOf = (orgId: string, spaceId: string): string => path.join(t.config.workspacesDir, orgId, spaceId);

  it('creates the files of each type under the space directory, once', async () => {
    const org = await buildOrg();
    for (const [type, files] of [
      ['empty', []],
      ['readme', ['README.md']],
      ['starterKit', ['README.md', 'AGENTS.md', 'docs/.gitkeep', 'data/.gitkeep', '.gitignore']],
    ] as const) {
      const id = (await as(org.apiToken).post('/spaces', { name: `S-${type}` })).body.space.id;
      const res = await client(org.apiToken).post(`/spaces/${id}/init`, {
        type,
        orgId: org.organizationId,
        spaceName: `Named ${type}`,
      });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ success: true, spaceId: id, type, files: [...files] });
      for (const f of files) expect(existsSync(path.join(dirOf(org.organizationId, id), f))).toBe(true);
      const space = (await as(org.apiToken).get(`/spaces/${id}`)).body.space;
      expect(space).toMatchObject({ name: `Named ${type}`, initializedAs: type, fileCount: files.length });
      if (type === 'readme')
        expect(readFileSync(path.join(dirOf(org.organizationId, id), 'README.md'), 'utf8')).toMatch(/^# Named readme/);
      const again = await client(org.apiToken).post(`/spaces/${id}/init`, { type: 'empty' });
      expect(again.status).toBe(409);
      expect(again.body).toEqual({ error: { code: 'conflict', message: 'Space already initialized' } });
    }
  });

  it('400 for an unknown type or another orgId; 404 for a space of another organization; works with a service token', async () => {
    const org = await buildOrg();
    const other = await buildOrg();
    const id = (await as(org.apiToken).post('/spaces', { name: 'S' })).body.space.id;
    expect((await client(org.apiToken).post(`/spaces/${id}/init`, { type: 'zip' })).body).toEqual({
      error: { code: 'validation_failed', message: 'Invalid type. Must be: empty, git, readme, starterKit' },
    });
    expect(
      (await client(org.apiToken).post(`/spaces/${id}/init`, { type: 'empty', orgId: other.organizationId })).status
    ).toBe(400);
    expect((await client(other.apiToken).post(`/spaces/${id}/init`, { type: 'empty' })).body).toEqual({
      error: { code: 'not_found', message: 'Space not found' },
    });
    // The `git` type's fields belong to it (its clone: test/api/current/workspaceRepos.test.ts).
    expect(
      (await client(org.apiToken).post(`/spaces/${id}/init`, { type: 'readme', url: 'https://example.com/x.git' })).body
    ).toEqual({
      error: { code: 'validation_failed', message: 'Field url is accepted only with type git' },
    });
    expect((await client(org.serviceToken).post(`/spaces/${id}/init`, { type: 'empty' })).status).toBe(200);
  });
});

describe('/api/spaces/{spaceId}/environment', () => {
  it('stores values encrypted (no clear text in the database), lists names only, removes with null', async () => {
    const org = await buildOrg();
    const id = (await as(org.apiToken).post('/spaces', { name: 'S' })).body.space.id;
    const secret = 'sk-live-very-secret-value-123';
    const res = await client(org.apiToken).post(`/spaces/${id}/environment`, {
      environmentVariables: { API_KEY: secret, REGION: 'eu-west-1' },
    });
    expect(res.status).toBe(200);
    expect(res.body.variables.map((v: { name: string }) => v.name)).toEqual(['API_KEY', 'REGION']);
    expect(JSON.stringify(res.body)).not.toContain(secret);

    const raw = await mongoose.connection.db!.collection('spaces').findOne({ _id: id as never });
    expect(JSON.stringify(raw)).not.toContain(secret);
    expect(JSON.stringify(raw)).not.toContain('eu-west-1');
    const stored = (await Space.findById(id).lean())!.environment.find((v) => v.name === 'API_KEY')!;
    expect(decryptSecret(Buffer.from(TEST_ENCRYPTION_KEY, 'hex'), stored.sealed)).toBe(secret);

    const listed = await client(org.apiToken).get(`/spaces/${id}/environment`);
    expect(listed.body.variables.map((v: { name: string }) => v.name)).toEqual(['API_KEY', 'REGION']);
    expect(JSON.stringify(listed.body)).not.toContain(secret);
    const read = await as(org.apiToken).get(`/spaces/${id}`);
    expect(read.body.space.environmentVariables).toEqual(['API_KEY', 'REGION']);
    expect(JSON.stringify(read.body)).not.toContain(secret);

    const removed = await client(org.apiToken).post(`/spaces/${id}/environment`, {
      environmentVariables: { API_KEY: null },
    });
    expect(removed.body.variables.map((v: { name: string }) => v.name)).toEqual(['REGION']);
  });

  it('400 for bad names or values; 404 for another organization', async () => {
    const org = await buildOrg();
    const other = await buildOrg();
    const id = (await as(org.apiToken).post('/spaces', { name: 'S' })).body.space.id;
    expect(
      (await client(org.apiToken).post(`/spaces/${id}/environment`, { environmentVariables: { '1BAD': 'x' } })).body
        .error.message
    ).toBe('Invalid environment variable name: use letters, digits and _, not starting with a digit');
    expect(
      (await client(org.apiToken).post(`/spaces/${id}/environment`, { environmentVariables: { A: 1 } })).status
    ).toBe(400);
    expect((await client(org.apiToken).post(`/spaces/${id}/environment`, {})).body.error.message).toBe(
      'Missing required field: environmentVariables'
    );
    expect(
      (await client(other.apiToken).post(`/spaces/${id}/environment`, { environmentVariables: { A: 'x' } })).status
    ).toBe(404);
  });
});
