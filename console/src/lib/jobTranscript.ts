/**
 * A job's transcript in the page: each iteration's input (the goal, the reviewer's feedback, the answer to the
 * agent's question, the next step) and its reply, from the job's record (GET /api/jobs/{id}: `iterations`, and
 * `artifacts`, each iteration's reply) merged with the job's event stream (GET /api/jobs/{id}/events), whose
 * `transcript.output` brings an iteration's reply as it ends. Events are applied once each (lib/eventSource.ts
 * `isNewEvent`): a replay after a reconnection changes nothing.
 */
import { isNewEvent, type StreamEvent } from './eventSource';

/** Events of the job stream the page listens to. */
export const JOB_EVENTS = ['job.status', 'transcript.output', 'artifact.updated', 'review.updated'] as const;

/** What the stream told so far. */
export interface JobLive {
  lastSeq: number;
  /** Each iteration's reply, by iteration number. */
  outputs: Record<number, { text: string; status: string }>;
  /** The state of the last `job.status` event. */
  status?: string;
  /** Events that change the job's record (its status, artifacts, review) seen so far: the page reads it again. */
  changes: number;
}

export const emptyLive = (): JobLive => ({ lastSeq: 0, outputs: {}, changes: 0 });

/**
 * @param live what the stream told so far.
 * @param e the next event.
 * @returns it with the event applied (the same object for a repeat).
 */
export function applyJobEvent(live: JobLive, e: StreamEvent): JobLive {
  if (!isNewEvent(live.lastSeq, e)) return live;
  const next: JobLive = { ...live, lastSeq: e.id };
  const d = e.data;
  if (e.event === 'transcript.output' && typeof d.iteration === 'number' && typeof d.text === 'string') {
    next.outputs = { ...live.outputs, [d.iteration]: { text: d.text, status: String(d.status ?? '') } };
  }
  if (e.event === 'job.status' && typeof d.status === 'string') next.status = d.status;
  if (e.event !== 'transcript.output') next.changes = live.changes + 1;
  return next;
}

/** The parts of a job's record the transcript reads. */
export interface JobRecord {
  iterations: { n: number; execution_id: string; reason: string; input: string; status: string }[];
  artifacts: { execution_id: string | null; content: string }[];
}

export interface JobEntry {
  n: number;
  executionId: string;
  /** What the iteration's input is, as the page names it. */
  label: string;
  input: string;
  status: string;
  /** Its reply, once the iteration ended. */
  reply?: string;
}

const LABELS: Record<string, string> = {
  goal: 'Goal',
  feedback: 'Reviewer feedback',
  input: 'Answer to the agent’s question',
  next_step: 'Approved, next step',
};

/**
 * @param job the job's record.
 * @param live what its stream told since.
 * @returns its iterations in order, each with its input and reply.
 */
export function jobEntries(job: JobRecord, live: JobLive): JobEntry[] {
  return [...job.iterations]
    .sort((a, b) => a.n - b.n)
    .map((i) => {
      const output = live.outputs[i.n];
      const artifact = job.artifacts.find((a) => a.execution_id === i.execution_id);
      const reply = output?.text ?? artifact?.content;
      return {
        n: i.n,
        executionId: i.execution_id,
        label: LABELS[i.reason] ?? i.reason,
        input: i.input,
        status: output?.status || i.status,
        ...(reply !== undefined ? { reply } : {}),
      };
    });
}
