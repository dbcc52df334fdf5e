/**
 * The stream's `meta` event on the execution record (commands/executionMeta.ts, issue 37 lever 3): recording an
 * execution writes its record alone, a rerun's its copied steps and then its record (2 writes), and the stream reads
 * `meta` first either way; an execution recorded before, with its `meta` stored, reads as it did. A new conversation's
 * chat is inserted beside the record (`recordBesideChat`), and a chat that fails takes the record back. Database
 * operations are counted with mongoose's debug hook.
 */
import mongoose from 'mongoose';
import { lastSeq, readEvents, type LoggedEvent } from '../../commands/eventLog';
import { metaEvent } from '../../commands/executionMeta';
import { recordBesideChat, recordPendingExecution, type PendingExecution } from '../../commands/executionStart';
import { preparedInsert } from '../../lib/mongo';
import { Chat, Execution, StreamEvent } from '../../models';
import { useTestDatabase } from '../helpers/mongo';

useTestDatabase();

const pending = (id: string): PendingExecution => ({
  _id: id,
  organizationId: 'org_m',
  agentId: 'agt_m',
  userId: 'usr_m',
  chatId: `cht_${id}`,
  sessionId: `ses_${id}`,
  spaceId: 'spc_m',
  turn: 1,
  message: 'hi',
  provider: 'builtin',
  model: 'echo',
  modelNote: null,
  parentExecutionId: null,
  rootExecutionId: id,
  taskId: null,
  source: 'v1',
  chatSeqBase: 0,
});

/** Runs `work`, and returns the database operations it made, in order. */
async function opsOf(work: () => Promise<unknown>): Promise<string[]> {
  const ops: string[] = [];
  mongoose.set('debug', (collection: string, method: string) => ops.push(`${collection}.${method}`));
  try {
    await work();
  } finally {
    mongoose.set('debug', false);
  }
  return ops;
}

it('an execution is recorded alone: its `meta` event is its record’s, read first from the stream', async () => {
  const ops = await opsOf(() => recordPendingExecution(pending('exec-m1')));
  expect(ops).toEqual(['executions.insertOne']);
  expect(await Execution.findById('exec-m1').lean()).toMatchObject({ metaOnRecord: true, streamSeq: 0 });
  expect(await StreamEvent.collection.countDocuments({ _id: { $regex: '^exec-m1:' } } as never)).toBe(0);
  // The same event on the wire as when it was stored.
  const meta = {
    seq: 1,
    event: 'meta',
    data: { executionId: 'exec-m1', chatId: 'cht_exec-m1', sessionId: 'ses_exec-m1' },
  };
  expect(metaEvent({ _id: 'exec-m1', chatId: 'cht_exec-m1', sessionId: 'ses_exec-m1' })).toEqual(meta);
  expect(await lastSeq('exec-m1')).toBe(1);
  expect(await readEvents('exec-m1')).toEqual([meta]);
});

it('a rerun writes its copied steps, then its record raising the head over them: 2 writes, not 3', async () => {
  const steps: Omit<LoggedEvent, 'seq'>[] = [
    { event: 'message', data: { messageType: 'assistant', text: 'a' } },
    { event: 'message', data: { messageType: 'tool_result', text: 'b' } },
  ];
  const seed = { rerun: { executionId: 'exec-orig', fromStep: 2, events: steps } };
  const ops = await opsOf(() => recordPendingExecution({ ...pending('exec-m2'), ...seed }));
  expect(ops).toEqual(['stream_events.insertMany', 'executions.insertOne']);
  expect(await Execution.findById('exec-m2').lean()).toMatchObject({ metaOnRecord: true, streamSeq: 3 });
  const expected = [metaEvent({ _id: 'exec-m2', chatId: 'cht_exec-m2', sessionId: 'ses_exec-m2' })].concat(
    steps.map((e, i) => ({ ...e, seq: i + 2 }))
  );
  expect(await readEvents('exec-m2')).toEqual(expected);
  expect(await StreamEvent.collection.countDocuments({ _id: { $regex: '^exec-m2:' } } as never)).toBe(2);
  // A repeat (a retried job activity) writes nothing twice and reads the same.
  await recordPendingExecution({ ...pending('exec-m2'), ...seed });
  expect(await StreamEvent.collection.countDocuments({ _id: { $regex: '^exec-m2:' } } as never)).toBe(2);
  expect(await readEvents('exec-m2')).toEqual(expected);
});

it('an execution recorded before, its `meta` stored, reads as it did', async () => {
  const stored = { seq: 1, event: 'meta', data: { executionId: 'exec-m3', chatId: 'cht_old', sessionId: 'ses_old' } };
  await Execution.collection.insertOne({
    _id: 'exec-m3',
    chatId: 'cht_old',
    sessionId: 'ses_old',
    streamSeq: 0,
  } as never);
  await StreamEvent.collection.insertOne({ _id: 'exec-m3:1', streamId: 'exec-m3', ...stored } as never);
  expect(await lastSeq('exec-m3')).toBe(1);
  expect(await readEvents('exec-m3')).toEqual([stored]);
});

describe('a new conversation’s chat beside the record', () => {
  const chatOf = (id: string) =>
    preparedInsert(Chat, {
      _id: `cht_${id}`,
      organizationId: 'org_m',
      spaceId: 'spc_m',
      agentId: 'agt_m',
      ownerId: 'usr_m',
    });

  it('both are written, side by side', async () => {
    const chat = await chatOf('exec-m4');
    const ops = await opsOf(() => recordBesideChat(chat.insert, pending('exec-m4')));
    expect([...ops].sort()).toEqual(['chats.insertOne', 'executions.insertOne']);
    expect(await Chat.findById('cht_exec-m4').lean()).toMatchObject({ agentId: 'agt_m' });
    expect(await Execution.findById('exec-m4').lean()).toMatchObject({ chatId: 'cht_exec-m4' });
  });

  it('a chat that cannot be inserted takes the record back, and its error is the answer', async () => {
    const chat = await chatOf('exec-m5');
    // Already stored: the chat's insert is refused by the server (duplicate key).
    await Chat.collection.insertOne({ ...chat.doc } as never);
    await expect(recordBesideChat(chat.insert, pending('exec-m5'))).rejects.toMatchObject({ code: 11000 });
    expect(await Execution.findById('exec-m5').lean()).toBeNull();
  });
});
