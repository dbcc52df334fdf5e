import { ApiToken } from '../../../models';
import { useTestApp } from '../../helpers/app';
import { buildMember, buildOrg } from '../../helpers/factories';
import { useTestDatabase } from '../../helpers/mongo';
import { v1As, v1Error } from '../../helpers/v1';

useTestDatabase();
const t = useTestApp();
const as = (token: string): ReturnType<typeof v1As> => v1As(t, token);

describe('/api/v1/keys', () => {
  it('creates a key whose token is returned once, lists without tokens, revokes', async () => {
    const org = await buildOrg();
    const created = await as(org.apiToken).post('/keys', {
      name: 'CI',
      expiresAt: new Date(Date.now() + 86_400_000).toISOString(),
    });
    expect(created.status).toBe(200);
    expect(created.body.token).toMatch(/^td_[A-Za-z0-9]{40}$/);
    expect(created.body.key).toMatchObject({
      id: expect.stringMatching(/^tok_/),
      name: 'CI',
      hint: created.body.token.slice(0, 7),
      revokedAt: null,
    });
    expect((await as(created.body.token).get('/profile')).status).toBe(200);

    const list = await as(org.apiToken).get('/keys');
    expect(list.body.keys).toHaveLength(2);
    expect(JSON.stringify(list.body)).not.toContain(created.body.token);
    expect(JSON.stringify(list.body)).not.toMatch(/"hash"/);

    expect((await as(org.apiToken).del(`/keys/${created.body.key.id}`)).body).toEqual({
      success: true,
      message: 'Key revoked',
    });
    expect((await as(created.body.token).get('/profile')).body).toEqual(
      v1Error(401, 'Unauthorized', 'Invalid or expired token')
    );
    const after = (await as(org.apiToken).get('/keys')).body.keys.find(
      (k: { id: string }) => k.id === created.body.key.id
    );
    expect(after.revokedAt).not.toBeNull();
  });

  it('400 for a missing name or a past expiry; 404 for someone else’s key', async () => {
    const org = await buildOrg();
    const member = await buildMember(org.organizationId);
    expect((await as(org.apiToken).post('/keys', {})).body.message).toBe('Missing required field: name');
    expect((await as(org.apiToken).post('/keys', { name: 'x', expiresAt: '2001-01-01T00:00:00Z' })).body.message).toBe(
      'expiresAt must be in the future'
    );
    expect((await as(org.apiToken).post('/keys', { name: 'x', expiresAt: 'tomorrow' })).status).toBe(400);
    const ownerKey = await ApiToken.findOne({ userId: org.userId, kind: 'v1' }).lean();
    expect((await as(member.apiToken).del(`/keys/${ownerKey!._id}`)).status).toBe(404);
    expect((await as(member.apiToken).get('/keys')).body.keys).toHaveLength(1);
  });
});

describe('/api/v1/profile', () => {
  it('PATCH changes the display fields of the caller only', async () => {
    const org = await buildOrg();
    const res = await as(org.apiToken).patch('/profile', { name: 'Ada', avatarUrl: 'https://example.com/ada.png' });
    expect(res.status).toBe(200);
    expect(res.body.user).toMatchObject({ id: org.userId, name: 'Ada', avatarUrl: 'https://example.com/ada.png' });
    expect((await as(org.apiToken).patch('/profile', { email: 'x@y.z' })).body.message).toBe('Unknown field: email');
    expect((await as(org.apiToken).patch('/profile', { avatarUrl: 'not a url' })).status).toBe(400);
  });

  it.each([
    'javascript:alert(1)',
    'JavaScript:alert(1)',
    'data:text/html,<script>alert(1)</script>',
    'file:///etc/passwd',
    'ftp://example.com/a.png',
    '//example.com/a.png',
    'http:/example.com',
    'https://',
    ' https://example.com/a.png',
  ])('avatarUrl %j is refused with 400: only http: and https: URLs', async (avatarUrl) => {
    const org = await buildOrg();
    const res = await as(org.apiToken).patch('/profile', { avatarUrl });
    expect(res.status).toBe(400);
    expect(res.body).toEqual(v1Error(400, 'Bad Request', 'Field avatarUrl must be an http or https URL'));
    expect((await as(org.apiToken).get('/profile')).body.user.avatarUrl).toBeNull();
  });

  it('avatarUrl accepts http: and https: URLs in any letter case', async () => {
    const org = await buildOrg();
    for (const avatarUrl of ['HTTPS://EXAMPLE.COM/A.PNG', 'http://127.0.0.1:8080/a.png?x=1#y']) {
      const res = await as(org.apiToken).patch('/profile', { avatarUrl });
      expect(res.status).toBe(200);
      expect(res.body.user.avatarUrl).toBe(avatarUrl);
    }
  });
});
