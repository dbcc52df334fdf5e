/**
 * A job's live state: its event stream (EventSource on GET /api/jobs/{id}/events, through lib/eventSource.ts, which
 * resumes with Last-Event-ID after a dropped connection) applied to lib/jobTranscript.ts's state. An event that
 * changes the job's record (its status, an artifact, the review) makes the page read the job again: every query of
 * ['jobs'] (the job, its lineage, the inbox's lists) is invalidated. The stream of a finished job ends (204), and
 * the connection shows `closed`.
 */
import { useQueryClient } from '@tanstack/react-query';
import { useEffect, useReducer, useState } from 'react';
import { openEventStream, type Connection, type StreamEvent } from './eventSource';
import { applyJobEvent, emptyLive, JOB_EVENTS, type JobLive } from './jobTranscript';

/**
 * @param jobId the job.
 * @param enabled open the stream (once the job was read: a job the session cannot read opens none).
 * @returns what the stream told and the connection's state.
 */
export function useJobStream(jobId: string, enabled: boolean): { live: JobLive; connection: Connection } {
  const [live, dispatch] = useReducer(
    (state: JobLive, e: StreamEvent | null) => (e ? applyJobEvent(state, e) : emptyLive()),
    undefined,
    emptyLive
  );
  const [connection, setConnection] = useState<Connection>('connecting');
  const queryClient = useQueryClient();

  useEffect(() => {
    if (!enabled) return;
    dispatch(null);
    return openEventStream(`/api/jobs/${encodeURIComponent(jobId)}/events`, JOB_EVENTS, {
      onEvent: dispatch,
      onConnection: setConnection,
    });
  }, [jobId, enabled]);

  useEffect(() => {
    if (live.changes > 0) void queryClient.invalidateQueries({ queryKey: ['jobs'] });
  }, [live.changes, queryClient]);

  return { live, connection };
}
