/**
 * An execution stream's final events on the execution record (commands/executionFinal.ts, issue 37 lever 3): a
 * finished execution stores no final events (the held end of its reply, the assistant message and `result`, or its
 * `error`), and every read of its stream (a replay from every position, SSE with Last-Event-ID inside and around the
 * made-up range, its writer's read) gives exactly what the same execution gives with its final events stored, as an
 * execution finished before reads (its record without the mark). Real api, service-process worker, Temporal and
 * database; database operations counted with mongoose's debug hook.
 */
import mongoose from 'mongoose';
import { EventTailer, insertEvents, readEvents, readWritten, type LoggedEvent } from '../../commands/eventLog';
import { Execution, StreamEvent } from '../../models';
import { bearer, buildOrg } from '../helpers/factories';
import { useTestDatabase } from '../helpers/mongo';
import { openSse } from '../helpers/sse';
import { v1As } from '../helpers/v1';
import { useExecutionStack } from '../helpers/worker';

useTestDatabase();
const stack = useExecutionStack('final', { DEFAULT_MODEL: 'claude-test' }, { service: true });

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

/** The stream as a client reads it from a position: status and the raw body (204: nothing more). */
async function sse(id: string, token: string, lastEventId?: number): Promise<[number, string]> {
  const stream = await openSse(`${stack.base}/api/v1/executions/${id}/stream`, {
    headers: {
      Authorization: bearer(token),
      ...(lastEventId === undefined ? {} : { 'Last-Event-ID': String(lastEventId) }),
    },
  });
  await stream.ended;
  return [stream.status, stream.events.map((e) => `${e.id} ${e.event} ${e.data}`).join('\n')];
}

/** Every read of an execution's stream: replays from every position, SSE from around the final events, the writer's. */
async function everyRead(id: string, token: string, head: number, finalFrom: number): Promise<unknown[]> {
  const reads: unknown[] = [await readWritten(id)];
  for (let after = 0; after <= head; after++) reads.push(await readEvents(id, after), await readEvents(id, after, 1));
  reads.push(await sse(id, token));
  for (let after = Math.max(finalFrom - 2, 0); after <= head + 1; after++) reads.push(await sse(id, token, after));
  return reads;
}

/** Stores the final events its record holds and takes the mark off: the execution as one finished before reads. */
async function asFinishedBefore(id: string, final: LoggedEvent[]): Promise<void> {
  await insertEvents(id, final);
  await Execution.collection.updateOne({ _id: id } as never, { $unset: { finalFrom: '', heldFrom: '' } });
}

const storedAt = async (id: string, from: number, to: number): Promise<number> =>
  StreamEvent.collection.countDocuments({
    $or: Array.from({ length: to - from + 1 }, (_, i) => ({ _id: `${id}:${from + i}` })),
  } as never);

it.each([
  ['completed, its reply held back whole', '[chunks:6][whole] hi', 'completed', true],
  ['completed, its reply streamed', '[chunks:30][slow:15] hi', 'completed', undefined],
  ['failed', '[fail:400] hi', 'failed', false],
])(
  'an execution %s: its final events are its record’s, read exactly as when they were stored',
  async (_, message, status, held) => {
    const org = await buildOrg();
    const as = v1As(stack.t, org.apiToken);
    const agent = await as.post('/agents', { name: 'Final', systemPrompt: 'x' });
    const done = await as.post(`/agents/${agent.body.id}/execute`, { message });
    // A failed JSON execution answers 500 without its id: the agent's one execution.
    const id = (done.body.executionId ??
      (await as.get(`/executions?agentId=${agent.body.id}`)).body.executions[0].id) as string;
    let rec = (await Execution.findById(id).lean())!;
    for (let i = 0; i < 100 && rec.status !== status; i++) {
      await new Promise((r) => setTimeout(r, 100));
      rec = (await Execution.findById(id).lean())!;
    }
    expect(rec.status).toBe(status);
    const head = rec.streamSeq!;
    const finalFrom = (rec as { finalFrom?: number }).finalFrom!;
    expect(finalFrom).toBeGreaterThanOrEqual(2);
    if (held !== undefined) expect((rec as { heldFrom?: number }).heldFrom !== undefined).toBe(held);
    expect(head).toBe(
      finalFrom + (status === 'completed' ? 1 : 0) + ((rec as { heldFrom?: number }).heldFrom !== undefined ? 1 : 0)
    );
    // Nothing stored from the final events on.
    expect(await storedAt(id, finalFrom, head)).toBe(0);

    const all = await readEvents(id);
    expect(all.map((e) => e.seq)).toEqual(Array.from({ length: head }, (_, i) => i + 1));
    const final = all.filter((e) => e.seq >= finalFrom);
    expect(final.at(-1)!.event).toBe(status === 'completed' ? 'result' : 'error');
    if (status === 'completed') {
      const text = all
        .filter((e) => (e.data as { messageType?: string }).messageType === 'stream_event')
        .map((e) => (e.data as { delta: { text: string } }).delta.text)
        .join('');
      expect(text).toBe(rec.result);
      expect(JSON.stringify(final.at(-2))).toBe(
        JSON.stringify({
          seq: head - 1,
          event: 'message',
          data: { messageType: 'assistant', content: [{ type: 'text', text: rec.result }] },
        })
      );
    }

    // Byte for byte what the finish stored before (activities/executionFinish.ts, its stored branch: same fields, same
    // order).
    const last = final.at(-1)!;
    const { inputTokens, outputTokens } = rec.usage as { inputTokens: number; outputTokens: number };
    expect(JSON.stringify([last.seq, last.event, last.data])).toBe(
      JSON.stringify(
        status === 'completed'
          ? [
              head,
              'result',
              { sessionId: rec.sessionId, usage: { input_tokens: inputTokens, output_tokens: outputTokens } },
            ]
          : [head, 'error', { message: rec.error!.message }]
      )
    );

    const made = await everyRead(id, org.apiToken, head, finalFrom);
    await asFinishedBefore(id, final);
    expect(await storedAt(id, finalFrom, head)).toBe(head - finalFrom + 1);
    const stored = await everyRead(id, org.apiToken, head, finalFrom);
    expect(made).toEqual(stored);
  },
  60_000
);

it('the head read carries no reply; the reply is read only by a range that covers an event holding it', async () => {
  const org = await buildOrg();
  const as = v1As(stack.t, org.apiToken);
  const agent = await as.post('/agents', { name: 'Final', systemPrompt: 'x' });
  const done = await as.post(`/agents/${agent.body.id}/execute`, { message: '[chunks:4][whole] hi' });
  const id = done.body.executionId as string;
  const rec = (await Execution.findById(id).lean()) as { finalFrom: number; heldFrom?: number; streamSeq: number };
  expect(rec.heldFrom).toBe(0);
  expect([rec.finalFrom, rec.streamSeq]).toEqual([2, 4]);
  // After the assistant message: the head read alone (`result` needs no reply).
  expect(await opsOf(() => readEvents(id, 3))).toEqual(['executions.findOne']);
  // From the start: the head, then the reply (no stored event to read: `meta` and the final events are the record's).
  expect(await opsOf(() => readEvents(id, 0))).toEqual(['executions.findOne', 'executions.findOne']);
});

it('a tailer woken with the seq of final events it cannot find stored reads the head and delivers them', async () => {
  await Execution.collection.insertOne({
    _id: 'exec-tail',
    chatId: 'cht_t',
    sessionId: 'ses_t',
    metaOnRecord: true,
    streamSeq: 2,
    status: 'running',
  } as never);
  await insertEvents('exec-tail', [
    { seq: 2, event: 'message', data: { messageType: 'stream_event', delta: { type: 'text_delta', text: 'ab' } } },
  ]);
  const tailer = new EventTailer(60_000);
  const got: LoggedEvent[] = [];
  const unsubscribe = tailer.subscribe('exec-tail', 2, (e) => got.push(e), false);
  try {
    // The finish's outcome write: the reply's end and the final events on the record, the head over them.
    await Execution.collection.updateOne({ _id: 'exec-tail' } as never, {
      $set: {
        status: 'completed',
        result: 'abcd',
        usage: { inputTokens: 3, outputTokens: 4 },
        finalFrom: 3,
        heldFrom: 2,
        streamSeq: 5,
      },
    });
    tailer.wake([{ streamId: 'exec-tail', seq: 5 }]);
    for (let i = 0; i < 50 && got.length < 3; i++) await new Promise((r) => setTimeout(r, 50));
    expect(got).toEqual([
      { seq: 3, event: 'message', data: { messageType: 'stream_event', delta: { type: 'text_delta', text: 'cd' } } },
      { seq: 4, event: 'message', data: { messageType: 'assistant', content: [{ type: 'text', text: 'abcd' }] } },
      { seq: 5, event: 'result', data: { sessionId: 'ses_t', usage: { input_tokens: 3, output_tokens: 4 } } },
    ]);
  } finally {
    unsubscribe();
    await tailer.stop();
  }
});
