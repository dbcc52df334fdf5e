/**
 * Deleting a space removes its files on disk after its record (issue 30 point 11); a repeated delete is a success
 * that removes whatever is still there, so a delete cut short is finished by repeating it.
 */
import { existsSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { Space } from '../../../models';
import { useTestApp } from '../../helpers/app';
import { bearer, buildMember, buildOrg } from '../../helpers/factories';
import { useTestDatabase } from '../../helpers/mongo';
import { v1As } from '../../helpers/v1';

useTestDatabase();
const t = useTestApp();
const as = (token: string): ReturnType<typeof v1As> => v1As(t, token);
const dirOf = (orgId: string, spaceId: string): string => path.join(t.config.workspacesDir, orgId, spaceId);

async function spaceWithFiles(token: string): Promise<string> {
  const id = (await as(token).post('/spaces', { name: 'Files' })).body.space.id as string;
  const init = await t.request
    .post(`/api/spaces/${id}/init`)
    .set('Authorization', bearer(token))
    .send({ type: 'starterKit' });
  expect(init.status).toBe(200);
  return id;
}

it('DELETE /api/v1/spaces/{id} removes the space directory, and only that one', async () => {
  const org = await buildOrg();
  const [gone, kept] = [await spaceWithFiles(org.apiToken), await spaceWithFiles(org.apiToken)];
  expect(existsSync(path.join(dirOf(org.organizationId, gone), 'README.md'))).toBe(true);

  const res = await as(org.apiToken).del(`/spaces/${gone}`);
  expect([res.status, res.body]).toEqual([200, { success: true, message: 'Space deleted successfully' }]);
  expect(existsSync(dirOf(org.organizationId, gone))).toBe(false);
  expect((await Space.findById(gone).lean())!.deletedAt).toBeInstanceOf(Date);
  expect((await as(org.apiToken).get(`/spaces/${gone}`)).status).toBe(404);
  expect(existsSync(path.join(dirOf(org.organizationId, kept), 'README.md'))).toBe(true);
});

it('a repeated delete succeeds and finishes a delete that left files behind; others still get 404', async () => {
  const org = await buildOrg();
  const member = await buildMember(org.organizationId);
  const other = await buildOrg();
  const id = await spaceWithFiles(org.apiToken);
  expect((await as(org.apiToken).del(`/spaces/${id}`)).status).toBe(200);
  // What a crash between the record and the files (or a write in flight) leaves: the record deleted, files on disk.
  await mkdir(path.join(dirOf(org.organizationId, id), 'docs'), { recursive: true });
  await writeFile(path.join(dirOf(org.organizationId, id), 'docs', 'left.txt'), 'left behind');

  expect((await as(other.apiToken).del(`/spaces/${id}`)).status).toBe(404);
  expect((await as(member.apiToken).del(`/spaces/${id}`)).status).toBe(404);
  expect(existsSync(path.join(dirOf(org.organizationId, id), 'docs', 'left.txt'))).toBe(true);

  const again = await as(org.apiToken).del(`/spaces/${id}`);
  expect([again.status, again.body]).toEqual([200, { success: true, message: 'Space deleted successfully' }]);
  expect(existsSync(dirOf(org.organizationId, id))).toBe(false);
  expect((await as(org.apiToken).del(`/spaces/${id}`)).status).toBe(200); // nothing left: still a success
});

it('a space never initialized (no directory) deletes cleanly', async () => {
  const org = await buildOrg();
  const id = (await as(org.apiToken).post('/spaces', { name: 'Empty' })).body.space.id;
  expect((await as(org.apiToken).del(`/spaces/${id}`)).status).toBe(200);
  expect(existsSync(dirOf(org.organizationId, id))).toBe(false);
});
