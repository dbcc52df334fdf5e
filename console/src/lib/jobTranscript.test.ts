/** A job's transcript (lib/jobTranscript.ts): the record's iterations with the stream's replies, each event once. */
import type { StreamEvent } from './eventSource';
import { applyJobEvent, emptyLive, jobEntries, type JobLive, type JobRecord } from './jobTranscript';

const status = (id: number, s: string): StreamEvent => ({ id, event: 'job.status', data: { job_id: 'j', status: s } });
const output = (id: number, n: number, text: string): StreamEvent => ({
  id,
  event: 'transcript.output',
  data: { job_id: 'j', iteration: n, execution_id: `e${n}`, status: 'completed', text },
});
const apply = (live: JobLive, events: StreamEvent[]) => events.reduce(applyJobEvent, live);

const record: JobRecord = {
  iterations: [
    { n: 2, execution_id: 'e2', reason: 'feedback', input: 'Shorter', status: 'running' },
    { n: 1, execution_id: 'e1', reason: 'goal', input: 'Write it', status: 'completed' },
  ],
  artifacts: [{ execution_id: 'e1', content: 'Stored reply' }],
};

it('applies each event once, and counts the ones that change the record', () => {
  const events = [status(1, 'running'), output(2, 1, 'First'), status(3, 'awaiting_review')];
  let live = apply(emptyLive(), events);
  const again = apply(live, events); // a reconnection that repeated them
  expect(again).toBe(live);
  expect(live).toMatchObject({ lastSeq: 3, status: 'awaiting_review', changes: 2, outputs: { 1: { text: 'First' } } });
  live = applyJobEvent(live, { id: 5, event: 'review.updated', data: { review_state: 'approved' } });
  expect(live.changes).toBe(3);
});

it('lists the iterations in order with their input and reply, the stream’s reply first', () => {
  expect(jobEntries(record, emptyLive())).toEqual([
    { n: 1, executionId: 'e1', label: 'Goal', input: 'Write it', status: 'completed', reply: 'Stored reply' },
    { n: 2, executionId: 'e2', label: 'Reviewer feedback', input: 'Shorter', status: 'running' },
  ]);
  const live = apply(emptyLive(), [output(1, 2, 'Short')]);
  expect(jobEntries(record, live)[1]).toMatchObject({ reply: 'Short', status: 'completed' });
});
