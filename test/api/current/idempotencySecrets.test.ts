/**
 * Idempotency records never hold a secret in clear (issue 30 point 6): an answer carrying a secret once (a rotated
 * signing secret, a share's URL token) is replayed to the client as it was, but the stored record is sealed
 * (read here straight from the collection).
 */
import mongoose from 'mongoose';
import { useTestApp } from '../../helpers/app';
import { currentAs } from '../../helpers/current';
import { bearer, buildOrg } from '../../helpers/factories';
import { useTestDatabase } from '../../helpers/mongo';

useTestDatabase();
const t = useTestApp({ WEBHOOK_ALLOW_PRIVATE: 'true' });

/** Every stored idempotency record, as the database holds it. */
async function storedRecords(): Promise<string> {
  const docs = await mongoose.connection.db!.collection('idempotency_records').find({}).toArray();
  expect(docs.length).toBeGreaterThan(0);
  return JSON.stringify(docs);
}

it('a replayed signing-secret rotation answers the same secret, which the record does not hold in clear', async () => {
  const org = await buildOrg();
  const auth = bearer(org.serviceToken);
  const put = await t.request
    .put('/api/messaging-integration')
    .set('Authorization', auth)
    .send({ url: 'https://127.0.0.1:9/hook' });
  expect(put.status).toBe(201);
  const rotate = () =>
    t.request
      .post('/api/messaging-integration/signing-secret/rotate')
      .set('Authorization', auth)
      .set('Idempotency-Key', 'rotate-once')
      .send({});
  const first = await rotate();
  expect(first.status).toBe(200);
  const secret = first.body.signing_secret as string;
  expect(secret).toMatch(/^whsec_/);
  const again = await rotate();
  expect([again.status, again.headers['idempotent-replayed'], again.body]).toEqual([200, 'true', first.body]);

  const stored = await storedRecords();
  expect(stored).not.toContain(secret);
  expect(stored).not.toContain('whsec_');
  expect(stored).not.toContain(secret.slice('whsec_'.length));
});

it('a replayed share answers the same URL, whose token the record does not hold in clear', async () => {
  const org = await buildOrg();
  const api = currentAs(t, org.serviceToken);
  const id: string = (await api.post('/workspaces', { name: 'Shared' })).body.workspace.id;
  const put = await t.request
    .put(`/api/workspaces/${id}/files/content`)
    .query({ path: 'a.txt' })
    .set('Authorization', bearer(org.serviceToken))
    .set('Content-Type', 'application/octet-stream')
    .send('bytes');
  expect(put.status).toBe(201);
  const share = () =>
    t.request
      .post(`/api/workspaces/${id}/files/share`)
      .set('Authorization', bearer(org.serviceToken))
      .set('Idempotency-Key', 'share-once')
      .send({ path: 'a.txt' });
  const first = await share();
  expect(first.status).toBe(201);
  const token = new URL(first.body.share.url as string).pathname.split('/').pop()!;
  expect(token).toMatch(/^[A-Za-z0-9]{40}$/);
  const again = await share();
  expect([again.status, again.headers['idempotent-replayed'], again.body]).toEqual([201, 'true', first.body]);
  expect((await t.request.get(new URL(again.body.share.url as string).pathname)).text).toBe('bytes');

  expect(await storedRecords()).not.toContain(token);
});
