/**
 * A job (/jobs/:jobId): its state and the actions it allows (components/JobActions.tsx), its live transcript (each
 * iteration's input and reply: the record merged with GET /api/jobs/{id}/events, lib/useJobStream.ts), its
 * artifacts and its lineage. A job the session cannot read (another organization's, or none) shows the not-found
 * page and nothing of it.
 */
import { Alert, Group, Loader, Paper, Stack, Text, Title } from '@mantine/core';
import { useQuery } from '@tanstack/react-query';
import { useEffect, useId, useRef } from 'react';
import { useParams } from 'react-router';
import { ApiError } from '../api/client';
import { jobKeys, readJob, type Job } from '../api/jobs';
import { AgentName } from '../components/AgentName';
import { ConnectionBadge } from '../components/ConnectionBadge';
import { JobActions, JobStatusBadge } from '../components/JobActions';
import { JobLineage } from '../components/JobLineage';
import { Markdown } from '../components/Markdown';
import { age, statusLabel } from '../lib/jobActions';
import { jobEntries, type JobLive } from '../lib/jobTranscript';
import { useJobStream } from '../lib/useJobStream';
import { NotFound } from './NotFound';

const FINISHED = ['completed', 'failed', 'cancelled'];

function Transcript({ job, live }: { job: Job; live: JobLive }) {
  const headingId = useId();
  const entries = jobEntries(job, live);
  return (
    <section aria-labelledby={headingId}>
      <Title order={2} size="h4" id={headingId} mb="xs">
        Transcript
      </Title>
      {entries.length === 0 && <Text size="sm">No iteration yet: the job is queued.</Text>}
      <Stack component="ol" gap="xs" p={0} m={0} aria-label="Iterations">
        {entries.map((e) => (
          <Paper component="li" key={e.n} withBorder p="sm" style={{ listStyle: 'none' }} data-iteration={e.n}>
            <Text size="xs" c="dimmed">
              Iteration {e.n} · {e.label}
            </Text>
            <div className="turn-user" data-testid="iteration-input">
              {e.input}
            </div>
            <Text size="xs" c="dimmed" mt="xs">
              Agent{e.reply === undefined ? ' (working…)' : ''}
            </Text>
            <div data-testid="iteration-reply" aria-busy={e.reply === undefined}>
              {e.reply !== undefined && <Markdown text={e.reply} />}
            </div>
          </Paper>
        ))}
      </Stack>
    </section>
  );
}

function Artifacts({ job }: { job: Job }) {
  const headingId = useId();
  return (
    <section aria-labelledby={headingId}>
      <Title order={2} size="h4" id={headingId} mb="xs">
        Artifacts
      </Title>
      {job.artifacts.length === 0 && <Text size="sm">No artifacts yet.</Text>}
      {job.artifacts.map((a) => (
        <details key={a.id} className="step">
          <summary>
            {a.name} ({a.kind})
          </summary>
          <Markdown text={a.content} />
        </details>
      ))}
    </section>
  );
}

export function JobPage() {
  const { jobId = '' } = useParams();
  const job = useQuery({ queryKey: jobKeys.one(jobId), queryFn: () => readJob(jobId) });
  const { live, connection } = useJobStream(jobId, job.isSuccess);
  // The job stream's `job.status` is appended before the record is written (activities/jobs.ts: events first, the
  // record after), so the read it triggers can still find the previous status: read again, a few times at most,
  // until the record has caught up with the stream.
  const lagging = job.isSuccess && live.status !== undefined && job.data.status !== live.status && !job.isFetching;
  const retries = useRef(0);
  useEffect(() => {
    retries.current = 0;
  }, [live.status]);
  useEffect(() => {
    if (!lagging || retries.current >= 20) return;
    const timer = setTimeout(() => {
      retries.current += 1;
      void job.refetch();
    }, 250);
    return () => clearTimeout(timer);
  }, [lagging, job.dataUpdatedAt]);

  if (job.isPending) return <Loader aria-label="Loading the job" />;
  if (job.isError && job.error instanceof ApiError && (job.error.status === 404 || job.error.status === 400)) {
    return <NotFound what="job" />;
  }
  if (job.isError)
    return (
      <Alert color="red" role="alert">
        {job.error.message}
      </Alert>
    );
  const j = job.data;
  return (
    <Stack maw={900}>
      <Group justify="space-between" wrap="wrap">
        <Title order={1} size="h2" style={{ overflowWrap: 'anywhere' }}>
          {j.title}
        </Title>
        <Group gap="xs">
          <JobStatusBadge status={j.status} />
          <ConnectionBadge connection={connection} closedLabel={FINISHED.includes(j.status) ? 'Finished' : undefined} />
        </Group>
      </Group>
      <Text size="sm" c="dimmed">
        Agent: <AgentName agentId={j.agent_id} /> · created {age(j.created_at, Date.now())} · review:{' '}
        {statusLabel(j.review.state)}
      </Text>
      {j.status === 'blocked' && j.question && (
        <Alert color="yellow" title="The agent asks">
          <span style={{ whiteSpace: 'pre-wrap', overflowWrap: 'anywhere' }}>{j.question}</span>
        </Alert>
      )}
      {j.error && (
        <Alert color="red" title="The job failed">
          {j.error.message}
        </Alert>
      )}
      <JobActions job={j} />
      <Transcript job={j} live={live} />
      <Artifacts job={j} />
      <JobLineage jobId={j.id} />
    </Stack>
  );
}
