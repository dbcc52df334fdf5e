/**
 * Storage that does not grow without bound (docs/decisions.md "Retention"): stream events, the webhook delivery log
 * and service events expire after their retention (short here, through the configuration), the expiry sweep deletes
 * them (its clock moved past their hour instead of a long sleep), a resume past expired events is answered with an
 * `expired` event, and records and usage stay. Real api, worker, Temporal and database.
 */
import { EXPIRY_BUCKET_MS, retentionExpiry } from '../../lib/expiry';
import { sweepExpired } from '../../commands/expirySweeps';
import { readEvents, appendEvents, type LoggedEvent } from '../../commands/eventLog';
import { recordEvent } from '../../commands/serviceEvents';
import { Execution, ExpirySweep, ServiceEvent, StreamEvent, StreamHead, WebhookDelivery } from '../../models';
import { bearer, buildOrg } from '../helpers/factories';
import { useTestDatabase } from '../helpers/mongo';
import { openSse, type SseEvent } from '../helpers/sse';
import { v1As } from '../helpers/v1';
import { useExecutionStack } from '../helpers/worker';

useTestDatabase();
const stack = useExecutionStack('retention', { STREAM_EVENT_RETENTION: '2s', DELIVERY_LOG_RETENTION: '2s' });

/** The sweep as it runs once the hour after every expiry written so far has passed. */
const sweepLater = (): Promise<number> => sweepExpired(new Date(Date.now() + 2 * EXPIRY_BUCKET_MS));

/** Reads a stream that the server ends. */
async function replay(path: string, token: string, lastEventId?: number): Promise<SseEvent[]> {
  const stream = await openSse(`${stack.base}${path}`, {
    headers: {
      Authorization: bearer(token),
      ...(lastEventId === undefined ? {} : { 'Last-Event-ID': String(lastEventId) }),
    },
  });
  expect(stream.status).toBe(200);
  await stream.ended;
  return stream.events;
}

afterEach(async () => ExpirySweep.deleteMany({}));

describe('retention of stream events', () => {
  it('each event carries its expiry: its retention after it was written', async () => {
    const before = Date.now();
    await appendEvents('exec-stamped', [{ seq: 1, event: 'meta', data: {} }]);
    const doc = await StreamEvent.findById('exec-stamped:1').lean();
    const expiresAt = doc!.expiresAt.getTime();
    expect(expiresAt - doc!.createdAt.getTime()).toBe(2000);
    expect(expiresAt).toBeGreaterThanOrEqual(before + 2000);
    expect(doc!.expiryBucket).toBe(Math.floor(expiresAt / EXPIRY_BUCKET_MS));
  });

  it('expired events are gone; a resume past them gets one `expired` event, the record and usage stay', async () => {
    const org = await buildOrg();
    const as = v1As(stack.t, org.apiToken);
    const agent = await as.post('/agents', { name: 'Echo', systemPrompt: 'Be brief.' });
    // Chunks a while apart: the reply's first delta is stored as it comes (the rest is held back to the finish).
    const done = await as.post(`/agents/${agent.body.id}/execute`, { message: '[slow:40] keep me briefly' });
    expect(done.status).toBe(200);
    const id = done.body.executionId as string;
    // The head of an execution's stream is on its record (commands/streamHeads.ts), and so are its final events from
    // `finalFrom` on (commands/executionFinal.ts).
    const rec = (await Execution.findById(id).lean())! as { streamSeq: number; finalFrom: number };
    const head = rec.streamSeq;
    const fin = rec.finalFrom;
    expect(fin).toBeGreaterThanOrEqual(3); // meta, a text delta at least
    expect(head).toBeGreaterThanOrEqual(fin + 1); // the assistant message and `result` at least

    // Its `meta` event is its record's (commands/executionMeta.ts), its final events too: the stream stores the
    // events between them.
    const stored = () => StreamEvent.collection.countDocuments({ _id: { $regex: `^${id}:` } } as never);
    expect(await stored()).toBe(fin - 2);
    expect(await StreamEvent.exists({ _id: `${id}:1` })).toBeNull();
    const final = await readEvents(id, fin - 1);
    expect(final.map((e) => e.event).slice(-2)).toEqual(['message', 'result']);
    expect(await sweepLater()).toBeGreaterThanOrEqual(fin - 2);
    expect(await stored()).toBe(0);

    // From the start: the `meta` event and the final events, kept with the record, around one `expired` event for
    // the events stored between them, and the stream ends (the execution is over).
    const all = await replay(`/api/v1/executions/${id}/stream`, org.apiToken);
    const { chatId, sessionId } = (await Execution.findById(id).lean())!;
    const sent = (events: LoggedEvent[]) =>
      events.map((e) => ({ id: String(e.seq), event: e.event, data: JSON.stringify(e.data) }));
    expect(all).toEqual([
      { id: '1', event: 'meta', data: JSON.stringify({ executionId: id, chatId, sessionId }) },
      {
        id: String(fin - 1),
        event: 'expired',
        data: JSON.stringify(
          fin - 1 === 2
            ? { from: 2, to: 2, message: 'Event 2 of this stream expired and is no longer kept' }
            : { from: 2, to: fin - 1, message: `Events 2 to ${fin - 1} of this stream expired and are no longer kept` }
        ),
      },
      ...sent(final),
    ]);
    // Resuming after the first event: the rest, said the same way.
    const resumed = await replay(`/api/v1/executions/${id}/stream`, org.apiToken, 1);
    expect(resumed).toEqual(all.slice(1));
    // Resuming at the expired event: the final events.
    expect(await replay(`/api/v1/executions/${id}/stream`, org.apiToken, fin - 1)).toEqual(sent(final));
    // Resuming at the last event: the stream is over and the client has read it to the end (204).
    const after = await openSse(`${stack.base}/api/v1/executions/${id}/stream`, {
      headers: { Authorization: bearer(org.apiToken), 'Last-Event-ID': String(head) },
    });
    await after.ended;
    expect([after.status, after.raw]).toEqual([204, '']);

    // Records stay: the execution, its result and its usage.
    const record = await as.get(`/executions/${id}`);
    expect(record.body.execution).toMatchObject({ status: 'completed', result: 'Echo: [slow:40] keep me briefly' });
    const usage = await stack.t.request
      .get(`/api/usage/organization/${org.organizationId}`)
      .set('Authorization', bearer(org.serviceToken));
    expect(usage.status).toBe(200);
    expect(JSON.stringify(usage.body)).toContain('"executions":1');
    expect(await Execution.countDocuments({ _id: id })).toBe(1);
  });

  it('a read over a stream whose oldest events expired: the expired run, then the kept events', async () => {
    const events = Array.from({ length: 10 }, (_, i) => ({ seq: i + 1, event: 'message', data: { n: i + 1 } }));
    await appendEvents('exec-partly', events);
    // The first six are gone, as a sweep leaves a stream whose oldest events were written an hour earlier.
    await StreamEvent.deleteMany({ $or: [1, 2, 3, 4, 5, 6].map((seq) => ({ _id: `exec-partly:${seq}` })) });
    expect(await readEvents('exec-partly', 2)).toEqual([
      {
        seq: 6,
        event: 'expired',
        data: { from: 3, to: 6, message: 'Events 3 to 6 of this stream expired and are no longer kept' },
      },
      ...events.slice(6),
    ]);
    expect((await readEvents('exec-partly', 5)).slice(0, 2)).toEqual([
      {
        seq: 6,
        event: 'expired',
        data: { from: 6, to: 6, message: 'Event 6 of this stream expired and is no longer kept' },
      },
      events[6],
    ]);
    expect(await readEvents('exec-partly', 6)).toEqual(events.slice(6)); // resumed from the expired event's id
  });

  it('a live chat stream that replays expired events says so, then goes on live', async () => {
    const org = await buildOrg();
    const api = (path: string, body: object) =>
      stack.t.request.post(`/api${path}`).set('Authorization', bearer(org.serviceToken)).send(body);
    const agent = await api('/agents', { name: 'Chatty', system_prompt: 'Be brief.' });
    expect(agent.status).toBe(201);
    const chatId = agent.body.agent.chat_id as string;
    const sent = await api(`/chats/${chatId}/messages`, { message: 'hello' });
    expect(sent.status).toBeLessThan(300);
    const streamId = `chat:${chatId}`;
    const deadline = Date.now() + 20_000;
    while (!(await readEvents(streamId)).some((e) => e.event === 'message.completed')) {
      if (Date.now() > deadline) throw new Error('the chat reply did not complete');
      await new Promise((r) => setTimeout(r, 100));
    }
    await sweepLater();
    const head = (await StreamHead.findById(streamId).lean())!.lastSeq;
    const stream = await openSse(`${stack.base}/api/chats/${chatId}/events`, {
      headers: { Authorization: bearer(org.serviceToken), 'Last-Event-ID': '0' },
    });
    await stream.waitFor(1);
    stream.close();
    expect(stream.events[0]).toMatchObject({ id: String(head), event: 'expired' });
    expect(JSON.parse(stream.events[0].data)).toMatchObject({ from: 1, to: head });
  });
});

describe('retention of the delivery log and service events', () => {
  it('service events and delivery log entries expire after DELIVERY_LOG_RETENTION', async () => {
    const org = await buildOrg();
    const { event } = await recordEvent({
      organizationId: org.organizationId,
      type: 'task.created',
      data: { id: 't' },
    });
    await WebhookDelivery.create({
      _id: event.id,
      organizationId: org.organizationId,
      type: 'task.created',
      status: 'delivered',
      run: 1,
      attempts: [],
      ...retentionExpiry('deliveryLogMs'),
    });
    const stored = await ServiceEvent.findById(event.id).lean();
    expect(stored!.expiresAt.getTime() - stored!.createdAt.getTime()).toBe(2000);
    await sweepLater();
    expect(await ServiceEvent.countDocuments({ _id: event.id })).toBe(0);
    expect(await WebhookDelivery.countDocuments({ _id: event.id })).toBe(0);
  });
});
