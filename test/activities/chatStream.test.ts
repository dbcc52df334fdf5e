/**
 * The chat stream's writers (activities/chatStream.ts) on the real database: an execution's chat events sit at seqs
 * fixed by its base, so a retried attempt rewrites the same ids (no duplicate, no gap), and an execution does not
 * write before the previous turn's range is complete (two writers never append to one stream at once).
 */
import { ApplicationFailure } from '@temporalio/common';
import { chatEventOf, mirrorEvent, mirrorToChat, type MirroredExecution } from '../../activities/chatStream';
import { appendEvents, readEvents, type LoggedEvent } from '../../commands/eventLog';
import { chatStreamId } from '../../models';
import { useTestDatabase } from '../helpers/mongo';

useTestDatabase();

const exec = (id: string, chatId: string, base: number, turn: number): MirroredExecution => ({
  _id: id,
  chatId,
  chatSeqBase: base,
  input: { message: `message of ${id}` },
  turn,
  organizationId: 'org_1',
  source: 'chat',
  error: null,
});
const meta = (id: string): LoggedEvent => ({ seq: 1, event: 'meta', data: { executionId: id } });
const delta = (seq: number, text: string): LoggedEvent => ({
  seq,
  event: 'message',
  data: { messageType: 'stream_event', delta: { type: 'text_delta', text } },
});
const result = (seq: number): LoggedEvent => ({ seq, event: 'result', data: { sessionId: 's' } });
const summary = async (chatId: string): Promise<string[]> =>
  (await readEvents(chatStreamId(chatId))).map((e) => `${e.seq} ${e.event} ${JSON.stringify(e.data)}`);

it('a retried attempt rewrites the same seqs: no duplicate, no gap, the first copy kept', async () => {
  const a = exec('exec-a', 'chat_retry', 0, 1);
  // Attempt 1: the preamble and two deltas, then it dies.
  await mirrorToChat(a, [meta('exec-a')]);
  await mirrorEvent(a, delta(2, 'Hel'));
  await mirrorEvent(a, delta(3, 'lo'));
  const before = await summary('chat_retry');
  expect(before.map((l) => l.split(' ').slice(0, 2).join(' '))).toEqual([
    '1 message.created',
    '2 chat.status',
    '3 message.delta',
    '4 message.delta',
  ]);
  // Attempt 2 sees the same execution events and mirrors what is missing (nothing), then finishes.
  await mirrorToChat(a, [meta('exec-a'), delta(2, 'Hel'), delta(3, 'lo')]);
  expect(await summary('chat_retry')).toEqual(before);
  await mirrorToChat(a, [meta('exec-a'), delta(2, 'Hel'), delta(3, 'lo'), result(4)], 'completed');
  // A retried finish writes nothing twice.
  await mirrorToChat(a, [meta('exec-a'), delta(2, 'Hel'), delta(3, 'lo'), result(4)], 'completed');
  const after = await readEvents(chatStreamId('chat_retry'));
  expect(after.map((e) => e.seq)).toEqual([1, 2, 3, 4, 5]);
  expect(after.at(-1)).toEqual(chatEventOf(a, result(4), 'completed'));
  expect(after.at(-1)!.data).toMatchObject({ status: 'done', error: null });
});

it('the next turn waits until the previous turn’s range is written, then continues right after it', async () => {
  const first = exec('exec-1', 'chat_order', 0, 1);
  // The first turn's range ends at 5 (message.created + meta, 2 deltas, result); only its start is written yet.
  await mirrorToChat(first, [meta('exec-1')]);
  const second = exec('exec-2', 'chat_order', 5, 2);
  let written = false;
  const next = mirrorToChat(second, [meta('exec-2')]).then(() => (written = true));
  await new Promise((r) => setTimeout(r, 300));
  expect(written).toBe(false);
  expect((await readEvents(chatStreamId('chat_order'))).map((e) => e.seq)).toEqual([1, 2]);
  // The first turn's finishing activity writes the rest of its range: the second turn goes on after it.
  await mirrorToChat(first, [meta('exec-1'), delta(2, 'a'), delta(3, 'b'), result(4)], 'completed');
  await next;
  const events = await readEvents(chatStreamId('chat_order'));
  expect(events.map((e) => e.seq)).toEqual([1, 2, 3, 4, 5, 6, 7]);
  expect(events.slice(5).map((e) => [e.event, e.data.execution_id])).toEqual([
    ['message.created', 'exec-2'],
    ['chat.status', 'exec-2'],
  ]);
});

it('gives up its attempt (retryable) when the previous range stays incomplete', async () => {
  await appendEvents(chatStreamId('chat_stuck'), [{ seq: 1, event: 'chat.status', data: {} }]);
  const late = exec('exec-late', 'chat_stuck', 4, 2);
  const failure = await mirrorToChat(late, [meta('exec-late')]).catch((e: unknown) => e);
  expect(failure).toBeInstanceOf(ApplicationFailure);
  expect(failure).toMatchObject({ type: 'ChatStreamBehind', nonRetryable: false });
  expect((await readEvents(chatStreamId('chat_stuck'))).map((e) => e.seq)).toEqual([1]);
}, 15_000);

it('maps a cancelled or failed turn to chat.status standby or error with the message', () => {
  const e = exec('exec-x', 'chat_x', 7, 3);
  const err: LoggedEvent = { seq: 3, event: 'error', data: { message: 'Execution cancelled' } };
  expect(chatEventOf(e, err, 'cancelled')).toEqual({
    seq: 11,
    event: 'chat.status',
    data: {
      chat_id: 'chat_x',
      execution_id: 'exec-x',
      status: 'standby',
      error: { message: 'Execution cancelled' },
    },
  });
  expect(chatEventOf(e, { ...err, data: { message: 'boom' } }, 'failed').data).toMatchObject({ status: 'error' });
});
