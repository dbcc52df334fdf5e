import { eventIdFor, recordEvent } from '../../commands/serviceEvents';
import { ServiceEvent } from '../../models';
import { useTestDatabase } from '../helpers/mongo';

useTestDatabase();

describe('service events', () => {
  it('records an event with the public body shape', async () => {
    const { event, created } = await recordEvent({ type: 'task.created', organizationId: 'org_a', data: { 'a.b': 1 } });
    expect(created).toBe(true);
    expect(event).toEqual({
      id: expect.stringMatching(/^evt_/),
      type: 'task.created',
      createdAt: expect.any(String),
      organizationId: 'org_a',
      data: { 'a.b': 1 },
    });
  });

  it('records a keyed change once, however often it is repeated (also concurrently)', async () => {
    const results = await Promise.all(
      Array.from({ length: 5 }, () =>
        recordEvent({ type: 'job.created', organizationId: 'org_a', data: { jobId: 'job_1' }, key: 'job_1:created' })
      )
    );
    expect(new Set(results.map((r) => r.event.id))).toEqual(new Set([eventIdFor('job_1:created')]));
    expect(results.filter((r) => r.created)).toHaveLength(1);
    expect(await ServiceEvent.countDocuments({ _id: eventIdFor('job_1:created') })).toBe(1);
  });
});
