/** The job actions the console offers (lib/jobActions.ts); the agreement with the service's state machine is test/console/jobActions.test.ts. */
import {
  actionBody,
  age,
  allowedActions,
  INBOX_ORDER,
  JOB_STATUSES,
  newIdempotencyKey,
  statusLabel,
  WAITING_STATUSES,
} from './jobActions';

it('offers the review actions under review, resume when blocked, nothing on finished work', () => {
  expect(allowedActions('awaiting_review')).toEqual(['approve', 'iterate', 'cancel']);
  expect(allowedActions('blocked')).toEqual(['resume', 'cancel']);
  expect(allowedActions('running')).toEqual(['cancel']);
  expect(allowedActions('queued')).toEqual(['cancel']);
  for (const s of ['completed', 'failed', 'cancelled'] as const) expect(allowedActions(s)).toEqual([]);
});

it('orders every state once, waiting ones first', () => {
  expect([...INBOX_ORDER].sort()).toEqual([...JOB_STATUSES].sort());
  expect(INBOX_ORDER.slice(0, WAITING_STATUSES.length)).toEqual(WAITING_STATUSES);
});

it('builds each action’s body, requiring feedback and input', () => {
  expect(actionBody('iterate', '  ')).toEqual({ error: 'Write the feedback for the next iteration.' });
  expect(actionBody('iterate', ' Shorter ')).toEqual({ body: { feedback: 'Shorter' } });
  expect(actionBody('resume', '')).toEqual({ error: 'Write the answer first.' });
  expect(actionBody('resume', 'Yes')).toEqual({ body: { input: 'Yes' } });
  expect(actionBody('approve', '')).toEqual({ body: {} });
  expect(actionBody('approve', 'Now the summary')).toEqual({ body: { next_step: 'Now the summary' } });
  expect(actionBody('cancel', 'ignored')).toEqual({ body: {} });
  expect(statusLabel('awaiting_review')).toBe('awaiting review');
});

it('says how old a job is, and makes a fresh idempotency key per decision', () => {
  const now = Date.parse('2026-12-02T12:00:00Z');
  expect(age('2026-12-02T11:59:30Z', now)).toBe('just now');
  expect(age('2026-12-02T11:55:00Z', now)).toBe('5 min ago');
  expect(age('2026-12-02T09:00:00Z', now)).toBe('3 h ago');
  expect(age('2026-12-01T11:00:00Z', now)).toBe('1 day ago');
  expect(age('2026-11-28T12:00:00Z', now)).toBe('4 days ago');
  expect(age(null, now)).toBe('');
  const a = newIdempotencyKey();
  expect(a).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  expect(newIdempotencyKey()).not.toBe(a);
});
