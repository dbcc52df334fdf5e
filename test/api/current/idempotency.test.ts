/**
 * Idempotency-Key on the current surface's mutating routes.
 */
import { requestFingerprint } from '../../../api/middlewares/idempotency';
import { claimIdempotencyKey } from '../../../commands/idempotency';
import { resolveToken, type AuthContext } from '../../../commands/tokens';
import { Agent, IdempotencyRecord } from '../../../models';
import { useTestApp } from '../../helpers/app';
import { currentAs, currentError } from '../../helpers/current';
import { bearer, buildMember, buildOrg } from '../../helpers/factories';
import { useTestDatabase } from '../../helpers/mongo';

useTestDatabase();
const t = useTestApp();

const body = { name: 'Once', system_prompt: 'Be brief.' };
const create = (token: string, key: string, b: object = body) =>
  t.request.post('/api/agents').set('Authorization', bearer(token)).set('Idempotency-Key', key).send(b);
const agentsOf = (organizationId: string) => Agent.countDocuments({ organizationId });

describe('Idempotency-Key', () => {
  it('the same key and body: the stored status and body again, with Idempotent-Replayed: true', async () => {
    const org = await buildOrg();
    const first = await create(org.serviceToken, 'key-1');
    expect(first.status).toBe(201);
    expect(first.headers['idempotent-replayed']).toBeUndefined();
    // the same JSON with its keys in another order is the same request
    const again = await create(org.serviceToken, 'key-1', { system_prompt: 'Be brief.', name: 'Once' });
    expect(again.status).toBe(201);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.body).toEqual(first.body);
    expect(again.headers['x-ratelimit-limit']).toBe('900');
    expect(await agentsOf(org.organizationId)).toBe(1);
  });

  it('ten concurrent identical requests create exactly one record', async () => {
    const org = await buildOrg();
    const all = await Promise.all(Array.from({ length: 10 }, () => create(org.serviceToken, 'burst')));
    const fresh = all.filter((r) => r.status === 201 && !r.headers['idempotent-replayed']);
    expect(fresh).toHaveLength(1);
    for (const r of all) {
      if (r.status === 201) expect(r.body).toEqual(fresh[0].body);
      else expect(r.body).toEqual(currentError('idempotency_conflict', expect.any(String) as unknown as string));
    }
    expect(all.every((r) => r.status === 201 || r.status === 409)).toBe(true);
    expect(await agentsOf(org.organizationId)).toBe(1);
    expect(await IdempotencyRecord.countDocuments({})).toBeGreaterThan(0);
  });

  it('the same key with another body or another route: 422', async () => {
    const org = await buildOrg();
    await create(org.serviceToken, 'key-2');
    const other = await create(org.serviceToken, 'key-2', { ...body, name: 'Twice' });
    expect(other.status).toBe(422);
    expect(other.body).toEqual(
      currentError('idempotency_key_reused', 'This Idempotency-Key was already used with a different request')
    );
    const route = await t.request
      .post('/api/workspaces')
      .set('Authorization', bearer(org.serviceToken))
      .set('Idempotency-Key', 'key-2')
      .send({ name: 'Once' });
    expect(route.status).toBe(422);
    expect(await agentsOf(org.organizationId)).toBe(1);
  });

  it('the same key while the first request still runs: 409', async () => {
    const org = await buildOrg();
    const auth = (await resolveToken(org.serviceToken, 'service')) as AuthContext;
    await claimIdempotencyKey(auth, 'slow', requestFingerprint('POST', '/api/agents', '', body));
    const res = await create(org.serviceToken, 'slow');
    expect(res.status).toBe(409);
    expect(res.body).toEqual(
      currentError(
        'idempotency_conflict',
        'A request with this Idempotency-Key is still being processed; retry after it completes'
      )
    );
    expect(await agentsOf(org.organizationId)).toBe(0);
  });

  it('a key over 255 characters: 400; 255 is accepted', async () => {
    const org = await buildOrg();
    const long = await create(org.serviceToken, 'k'.repeat(256));
    expect(long.status).toBe(400);
    expect(long.body).toEqual(currentError('validation_failed', 'Idempotency-Key must be 1 to 255 characters'));
    expect((await create(org.serviceToken, 'k'.repeat(255))).status).toBe(201);
  });

  it('a 4xx answer is stored and replayed too', async () => {
    const org = await buildOrg();
    const patch = () =>
      currentAs(t, org.serviceToken).patch('/agents/agt_missing', { name: 'x' }).set('Idempotency-Key', 'nf');
    const first = await patch();
    expect(first.status).toBe(404);
    const again = await patch();
    expect(again.status).toBe(404);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.body).toEqual(currentError('not_found', 'Agent not found'));
  });

  it('keys are per identity: another user’s same key runs its own request', async () => {
    const org = await buildOrg();
    const admin = await buildMember(org.organizationId, 'admin');
    await create(org.serviceToken, 'shared');
    const res = await create(admin.serviceToken, 'shared');
    expect(res.status).toBe(201);
    expect(res.headers['idempotent-replayed']).toBeUndefined();
    expect(await agentsOf(org.organizationId)).toBe(2);
  });

  it('an expired key is never replayed; an abandoned running claim is taken over', async () => {
    const org = await buildOrg();
    await create(org.serviceToken, 'old');
    await IdempotencyRecord.updateMany({}, { $set: { expiresAt: new Date(Date.now() - 1000) } });
    const res = await create(org.serviceToken, 'old');
    expect(res.status).toBe(201);
    expect(res.headers['idempotent-replayed']).toBeUndefined();
    expect(await agentsOf(org.organizationId)).toBe(2);

    const auth = (await resolveToken(org.serviceToken, 'service')) as AuthContext;
    const { id } = await claimIdempotencyKey(auth, 'lost', requestFingerprint('POST', '/api/agents', '', body));
    await IdempotencyRecord.updateOne({ _id: id }, { $set: { lockedUntil: new Date(Date.now() - 1000) } });
    expect((await create(org.serviceToken, 'lost')).status).toBe(201);
    expect(await agentsOf(org.organizationId)).toBe(3);
  });

  it('without the header nothing is stored; GET routes ignore it', async () => {
    const org = await buildOrg();
    const before = await IdempotencyRecord.countDocuments({});
    await currentAs(t, org.serviceToken).post('/agents', body);
    await currentAs(t, org.serviceToken).get('/agents').set('Idempotency-Key', 'read');
    expect(await IdempotencyRecord.countDocuments({})).toBe(before);
  });
});
