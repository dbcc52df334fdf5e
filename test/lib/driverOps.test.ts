/**
 * lib/driverOps.ts writes what mongoose's `updateOne` / `findOneAndUpdate` write for the hot path's updates (timestamps,
 * the defaults of an upsert's insert), and reads what `findById().lean()` reads.
 */
import type mongoose from 'mongoose';
import { findByIdDirect, findOneAndUpdateDirect, updateOneDirect, type DirectUpdate } from '../../lib/driverOps';
import { ChatMessage, Execution, Session, SpendRollup, StreamHead } from '../../models';
import { useTestDatabase } from '../helpers/mongo';

useTestDatabase();

type AnyModel = mongoose.Model<any>; // eslint-disable-line @typescript-eslint/no-explicit-any

/** A stored document without its id, keys sorted, each value with its type (times only as "a date"). */
function shape(doc: Record<string, unknown> | null): string {
  const entries = Object.entries(doc ?? {})
    .filter(([k]) => k !== '_id')
    .sort(([a], [b]) => (a < b ? -1 : 1))
    .map(([k, v]) => (v instanceof Date ? [k, 'date'] : [k, v, typeof v]));
  return JSON.stringify(entries);
}

const upserts: Array<[string, AnyModel, DirectUpdate]> = [
  ['a stream head', StreamHead, { $max: { lastSeq: 7 } }],
  [
    'an assistant message',
    ChatMessage,
    {
      $setOnInsert: {
        organizationId: 'o',
        chatId: 'c',
        sessionId: 's',
        executionId: 'e',
        role: 'assistant',
        content: 'x',
        position: 3,
      },
    },
  ],
  [
    "a day's spend rollup",
    SpendRollup,
    { $inc: { calls: 1, inputTokens: 5, 'agents.a.calls': 1 }, $setOnInsert: { organizationId: 'o', day: 'd' } },
  ],
];

it.each(upserts)('an upsert of %s stores what mongoose stores', async (_name, model, update) => {
  await model.updateOne({ _id: 'by-mongoose' }, update, { upsert: true });
  await updateOneDirect(model, { _id: 'by-driver' }, update, { upsert: true });
  // Twice: the second matches and changes only what the update changes.
  await model.updateOne({ _id: 'by-mongoose' }, update, { upsert: true });
  await updateOneDirect(model, { _id: 'by-driver' }, update, { upsert: true });
  const [a, b] = await Promise.all([
    model.collection.findOne({ _id: 'by-mongoose' } as never),
    model.collection.findOne({ _id: 'by-driver' } as never),
  ]);
  expect(shape(b)).toBe(shape(a));
});

it('an update sets updatedAt, and findOneAndUpdate answers the document after it', async () => {
  await Session.create({ _id: 's1', organizationId: 'o', chatId: 'c', agentId: 'a', activeExecutionId: 'e', turns: 1 });
  const before = (await Session.collection.findOne({ _id: 's1' } as never))!;
  const res = await updateOneDirect(
    Session,
    { _id: 's1', activeExecutionId: 'e' },
    { $set: { activeExecutionId: null }, $addToSet: { history: 'e' } }
  );
  expect(res).toEqual({ matchedCount: 1, upsertedCount: 0 });
  const after = (await Session.collection.findOne({ _id: 's1' } as never))!;
  expect(after.activeExecutionId).toBeNull();
  expect(after.history).toEqual(['e']);
  expect((after.updatedAt as Date).getTime()).toBeGreaterThanOrEqual((before.updatedAt as Date).getTime());
  expect(after.createdAt).toEqual(before.createdAt);
  expect(await updateOneDirect(Session, { _id: 's1', activeExecutionId: 'e' }, { $set: { turns: 2 } })).toEqual({
    matchedCount: 0,
    upsertedCount: 0,
  });

  await Execution.collection.insertOne({ _id: 'x1', status: 'pending' } as never);
  const claimed = await findOneAndUpdateDirect<{ status: string; updatedAt: Date }>(
    Execution,
    { _id: 'x1', status: 'pending' },
    { $set: { status: 'running' } }
  );
  expect(claimed?.status).toBe('running');
  expect(claimed?.updatedAt).toBeInstanceOf(Date);
  expect(await findOneAndUpdateDirect(Execution, { _id: 'x1', status: 'pending' }, { $set: {} })).toBeNull();
  expect(await findByIdDirect(Execution, 'x1', { status: 1 })).toEqual({ _id: 'x1', status: 'running' });
  expect(await findByIdDirect(Execution, 'none')).toBeNull();
});

it('findOneAndUpdate answers the document as it was before when asked, and $unset removes a path', async () => {
  await Execution.collection.insertOne({ _id: 'x2', status: 'running', eagerClaim: true } as never);
  const before = await findOneAndUpdateDirect<{ status: string; eagerClaim?: boolean }>(
    Execution,
    { _id: 'x2', $or: [{ status: 'pending' }, { status: 'running', eagerClaim: true }] },
    { $set: { status: 'running' }, $unset: { eagerClaim: '' } },
    { returnDocument: 'before' }
  );
  expect(before).toMatchObject({ status: 'running', eagerClaim: true });
  const after = await findByIdDirect<Record<string, unknown>>(Execution, 'x2');
  expect(after).toMatchObject({ status: 'running' });
  expect(after).not.toHaveProperty('eagerClaim');
  expect(after!.updatedAt).toBeInstanceOf(Date);
  // The flag gone, the same filter matches no more.
  expect(
    await findOneAndUpdateDirect(
      Execution,
      { _id: 'x2', $or: [{ status: 'pending' }, { status: 'running', eagerClaim: true }] },
      { $set: { status: 'running' } },
      { returnDocument: 'before' }
    )
  ).toBeNull();
});
