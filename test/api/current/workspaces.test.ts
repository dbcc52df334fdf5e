import { Membership } from '../../../models';
import { useTestApp } from '../../helpers/app';
import { currentAs, currentError } from '../../helpers/current';
import { buildOrg } from '../../helpers/factories';
import { useTestDatabase } from '../../helpers/mongo';
import { v1As } from '../../helpers/v1';

useTestDatabase();
const t = useTestApp();

describe('POST /api/workspaces', () => {
  it('creates a workspace that is a v1 space', async () => {
    const org = await buildOrg();
    const res = await currentAs(t, org.serviceToken).post('/workspaces', { name: 'Research', description: 'd' });
    expect(res.status).toBe(201);
    expect(res.body.workspace).toMatchObject({
      name: 'Research',
      description: 'd',
      visibility: 'organization',
      organization_id: org.organizationId,
      owner_id: org.userId,
      is_default: false,
    });
    const v1 = await v1As(t, org.apiToken).get(`/spaces/${res.body.workspace.id}`);
    expect(v1.status).toBe(200);
    expect(v1.body.space).toMatchObject({ id: res.body.workspace.id, name: 'Research' });
  });

  it('400 without a name or with a bad visibility', async () => {
    const org = await buildOrg();
    const api = currentAs(t, org.serviceToken);
    expect((await api.post('/workspaces', {})).body).toEqual(
      currentError('validation_failed', 'Missing required field: name')
    );
    const bad = await api.post('/workspaces', { name: 'x', visibility: 'everyone' });
    expect(bad.status).toBe(400);
    expect(bad.body.error.code).toBe('validation_failed');
  });
});

describe('POST /api/workspaces/{id}/select', () => {
  it('records the caller’s active workspace', async () => {
    const org = await buildOrg();
    const api = currentAs(t, org.serviceToken);
    const { id } = (await api.post('/workspaces', { name: 'Active' })).body.workspace;
    const res = await api.post(`/workspaces/${id}/select`);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ active_workspace_id: id, workspace: { id, name: 'Active' } });
    const membership = await Membership.findOne({ organizationId: org.organizationId, userId: org.userId }).lean();
    expect(membership?.activeWorkspaceId).toBe(id);
  });

  it('404 Workspace not found for an unknown id, and for another organization’s public space', async () => {
    const org = await buildOrg();
    const other = await buildOrg();
    const pub = await v1As(t, other.apiToken).post('/spaces', { name: 'Public', visibility: 'public' });
    for (const id of ['spc_unknown', pub.body.space.id]) {
      const res = await currentAs(t, org.serviceToken).post(`/workspaces/${id}/select`);
      expect(res.status).toBe(404);
      expect(res.body).toEqual(currentError('not_found', 'Workspace not found'));
    }
  });
});
