/**
 * What a person may do with a job, offered only in the states that allow it (lib/jobActions.ts): Approve, Request
 * changes (another iteration, with required feedback), Resume (with the answer to the agent's question), Cancel
 * (after a confirmation in the page, never a browser dialog). Each decision sends its own Idempotency-Key; a success
 * puts the job's new state in place and invalidates every ['jobs'] query.
 */
import { Alert, Badge, Button, Group, Stack, Text, Textarea } from '@mantine/core';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useEffect, useId, useRef, useState, type FormEvent } from 'react';
import { ApiError } from '../api/client';
import { actOnJob, jobKeys, type Decision, type Job } from '../api/jobs';
import {
  actionBody,
  allowedActions,
  newIdempotencyKey,
  statusLabel,
  type JobAction,
  type JobStatus,
} from '../lib/jobActions';

const statusColors: Record<string, string> = {
  awaiting_review: 'orange',
  blocked: 'yellow',
  needs_attention: 'orange',
  running: 'blue',
  queued: 'gray',
  completed: 'green',
  failed: 'red',
  cancelled: 'gray',
};

export function JobStatusBadge({ status }: { status: string }) {
  return (
    <Badge color={statusColors[status] ?? 'gray'} variant="light">
      {statusLabel(status)}
    </Badge>
  );
}

type Open = null | 'iterate' | 'resume' | 'cancel';

export function JobActions({ job }: { job: Pick<Job, 'id' | 'title' | 'status' | 'question'> }) {
  const queryClient = useQueryClient();
  const [open, setOpen] = useState<Open>(null);
  const [text, setText] = useState('');
  const [invalid, setInvalid] = useState<string | null>(null);
  const [key, setKey] = useState<string | null>(null);
  const fieldId = useId();
  const field = useRef<HTMLTextAreaElement>(null);
  const keep = useRef<HTMLButtonElement>(null);
  // Keyboard use: the opened form's field takes the focus; the cancel confirmation focuses its safe answer.
  useEffect(() => {
    if (open === 'iterate' || open === 'resume') field.current?.focus();
    if (open === 'cancel') keep.current?.focus();
  }, [open]);
  const decide = useMutation({
    mutationFn: (d: Decision) => actOnJob(job.id, d),
    onSuccess: (updated) => {
      queryClient.setQueryData(jobKeys.one(job.id), updated);
      setOpen(null);
      setText('');
      setKey(null);
      void queryClient.invalidateQueries({ queryKey: ['jobs'] });
    },
    onError: (err) => {
      // Refused (e.g. 409: the job moved on meanwhile): a new attempt is a new decision; the page reads the job again.
      if (err instanceof ApiError && err.status < 500) setKey(null);
      void queryClient.invalidateQueries({ queryKey: ['jobs'] });
    },
  });
  const actions = allowedActions(job.status as JobStatus);
  if (actions.length === 0) return null;

  /** One key per decision: kept while the same decision is retried, new once it is done or abandoned. */
  const send = (action: JobAction, typed = '') => {
    const built = actionBody(action, typed);
    if ('error' in built) {
      setInvalid(built.error);
      return;
    }
    setInvalid(null);
    const k = key ?? newIdempotencyKey();
    setKey(k);
    decide.mutate({ action, body: built.body, key: k });
  };
  const show = (which: Open) => {
    setOpen(which);
    setText('');
    setInvalid(null);
    setKey(null);
    decide.reset();
  };
  const submit = (action: 'iterate' | 'resume') => (e: FormEvent) => {
    e.preventDefault();
    send(action, text);
  };

  return (
    <Stack gap="xs" role="group" aria-label={`Actions for ${job.title}`}>
      {open === null && (
        <Group gap="xs" wrap="wrap">
          {actions.includes('approve') && (
            <Button size="compact-sm" color="green" onClick={() => send('approve')} loading={decide.isPending}>
              Approve
            </Button>
          )}
          {actions.includes('iterate') && (
            <Button size="compact-sm" variant="light" onClick={() => show('iterate')}>
              Request changes
            </Button>
          )}
          {actions.includes('resume') && (
            <Button size="compact-sm" variant="light" onClick={() => show('resume')}>
              Resume
            </Button>
          )}
          {actions.includes('cancel') && (
            <Button size="compact-sm" variant="subtle" color="red" onClick={() => show('cancel')}>
              Cancel job
            </Button>
          )}
        </Group>
      )}
      {(open === 'iterate' || open === 'resume') && (
        <form onSubmit={submit(open)} noValidate>
          <Stack gap="xs">
            {open === 'resume' && job.question && (
              <Text size="sm" style={{ whiteSpace: 'pre-wrap', overflowWrap: 'anywhere' }}>
                The agent asks: {job.question}
              </Text>
            )}
            <Textarea
              id={fieldId}
              label={open === 'iterate' ? 'Feedback' : 'Answer'}
              description={
                open === 'iterate'
                  ? 'What the agent should change: its next iteration starts from it'
                  : 'What the agent needs to continue'
              }
              required
              value={text}
              onChange={(e) => setText(e.currentTarget.value)}
              error={invalid ?? undefined}
              autosize
              minRows={2}
              maxRows={8}
              ref={field}
            />
            <Group gap="xs">
              <Button type="submit" size="compact-sm" loading={decide.isPending}>
                {open === 'iterate' ? 'Send feedback' : 'Resume the job'}
              </Button>
              <Button size="compact-sm" variant="default" onClick={() => show(null)}>
                Back
              </Button>
            </Group>
          </Stack>
        </form>
      )}
      {open === 'cancel' && (
        <Stack gap="xs" role="alertdialog" aria-label="Confirm cancelling" aria-describedby={`${fieldId}-cancel`}>
          <Text size="sm" id={`${fieldId}-cancel`}>
            Cancel this job? Its running work stops, and it cannot be resumed.
          </Text>
          <Group gap="xs">
            <Button size="compact-sm" color="red" onClick={() => send('cancel')} loading={decide.isPending}>
              Yes, cancel the job
            </Button>
            <Button ref={keep} size="compact-sm" variant="default" onClick={() => show(null)}>
              Keep it
            </Button>
          </Group>
        </Stack>
      )}
      {decide.isError && (
        <Alert color="red" role="alert" p="xs">
          {decide.error.message}
        </Alert>
      )}
    </Stack>
  );
}
