/**
 * The review inbox (/inbox): the organization's jobs, those waiting for a person first (awaiting review, blocked),
 * then the others by state, each with its title, agent, state and age, a review's deadline and declared actions
 * (issue 40), and the actions its state allows (components/JobActions.tsx). One section per state, 20 jobs a page as the API pages them; a state filter shows
 * one section. The lists update live: a job.* event of the page's one organization stream
 * (lib/useOrganizationEvents.ts), or a decision taken here, invalidates every ['jobs'] query.
 */
import { Alert, Anchor, Button, Group, Loader, Paper, Select, Stack, Text, Title } from '@mantine/core';
import { useInfiniteQuery, useQuery } from '@tanstack/react-query';
import { useId, useState } from 'react';
import { Link } from 'react-router';
import { jobKeys, listJobs, type Job } from '../api/jobs';
import { AgentName } from '../components/AgentName';
import { ConnectionBadge } from '../components/ConnectionBadge';
import { JobActions, JobStatusBadge } from '../components/JobActions';
import { JobStart } from '../components/JobStart';
import { age, INBOX_ORDER, JOB_STATUSES, statusLabel, type JobStatus } from '../lib/jobActions';
import { useOrganizationEvents } from '../lib/useOrganizationEvents';

const SECTION_TITLES: Record<JobStatus, string> = {
  awaiting_review: 'Awaiting review',
  blocked: 'Blocked: the agent asks a question',
  needs_attention: 'Needs attention: a budget is spent',
  running: 'Running',
  queued: 'Queued',
  failed: 'Failed',
  completed: 'Completed',
  cancelled: 'Cancelled',
};

function JobRow({ job, now }: { job: Job; now: number }) {
  return (
    <Paper component="li" withBorder p="sm" style={{ listStyle: 'none' }} data-job-id={job.id}>
      <Stack gap={6}>
        <Group justify="space-between" wrap="wrap" gap="xs">
          <Anchor
            component={Link}
            to={`/jobs/${encodeURIComponent(job.id)}`}
            fw={600}
            style={{ overflowWrap: 'anywhere' }}
          >
            {job.title}
          </Anchor>
          <JobStatusBadge status={job.status} />
        </Group>
        <Text size="sm" c="dimmed">
          Agent: <AgentName agentId={job.agent_id} /> · created {age(job.created_at, now)}
        </Text>
        {job.status === 'awaiting_review' && (
          <Text size="sm" data-review-due={job.review.deadline ?? ''}>
            {job.review.deadline
              ? `Review due ${new Date(job.review.deadline).toLocaleString()}`
              : 'No review deadline'}
            {job.review.on_timeout ? ` (then ${job.review.on_timeout.replace('_', ' ')})` : ''} · Actions:{' '}
            {job.review.actions.map((a) => a.name).join(', ')}
          </Text>
        )}
        {job.status === 'blocked' && job.question && (
          <Text size="sm" style={{ whiteSpace: 'pre-wrap', overflowWrap: 'anywhere' }}>
            The agent asks: {job.question}
          </Text>
        )}
        <JobActions job={job} />
      </Stack>
    </Paper>
  );
}

function JobSection({ status, alone }: { status: JobStatus; alone: boolean }) {
  const headingId = useId();
  const jobs = useInfiniteQuery({
    queryKey: jobKeys.list(status),
    initialPageParam: undefined as string | undefined,
    queryFn: ({ pageParam }) => listJobs(status, pageParam),
    getNextPageParam: (last) => last.next_cursor ?? undefined,
  });
  const rows = jobs.data?.pages.flatMap((p) => p.jobs) ?? [];
  if (jobs.isPending) return alone ? <Loader aria-label="Loading jobs" /> : null;
  if (jobs.isError)
    return (
      <Alert color="red" role="alert" title={SECTION_TITLES[status]}>
        {jobs.error.message}
      </Alert>
    );
  if (rows.length === 0) return alone ? <Text>No jobs {statusLabel(status)}.</Text> : null;
  const now = Date.now();
  return (
    <section aria-labelledby={headingId}>
      <Title order={2} size="h4" id={headingId} mb="xs">
        {SECTION_TITLES[status]}
      </Title>
      <Stack component="ul" gap="xs" p={0} m={0}>
        {rows.map((job) => (
          <JobRow key={job.id} job={job} now={now} />
        ))}
      </Stack>
      {jobs.hasNextPage && (
        <Button mt="xs" variant="default" onClick={() => void jobs.fetchNextPage()} loading={jobs.isFetchingNextPage}>
          More {statusLabel(status)} jobs
        </Button>
      )}
    </section>
  );
}

export function InboxPage() {
  const [status, setStatus] = useState<JobStatus | null>(null);
  const { connection } = useOrganizationEvents(['job.'], [['jobs']]);
  // Whether the organization has any job at all (the empty state); each section reads its own state's pages.
  const any = useQuery({ queryKey: ['jobs', 'any'], queryFn: () => listJobs(null, undefined) });
  const sections = status ? [status] : INBOX_ORDER;
  return (
    <Stack>
      <Group justify="space-between" align="flex-end" wrap="wrap">
        <Group gap="xs">
          <Title order={1}>Review inbox</Title>
          <ConnectionBadge connection={connection} />
        </Group>
        <Select
          label="Status"
          placeholder="Any"
          clearable
          data={JOB_STATUSES.map((s) => ({ value: s, label: statusLabel(s) }))}
          value={status}
          onChange={(v) => setStatus(v as JobStatus | null)}
          w={200}
        />
      </Group>
      <JobStart />
      {any.isPending && <Loader aria-label="Loading jobs" />}
      {any.isError && (
        <Alert color="red" role="alert">
          {any.error.message}
        </Alert>
      )}
      {any.isSuccess && any.data.jobs.length === 0 && (
        <Text>No jobs yet: start one above, or from a mission's task (Start work).</Text>
      )}
      {any.isSuccess &&
        any.data.jobs.length > 0 &&
        sections.map((s) => <JobSection key={s} status={s} alone={status !== null} />)}
    </Stack>
  );
}
