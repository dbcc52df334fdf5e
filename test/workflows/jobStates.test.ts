/**
 * The job state machine is defined once (workflows/jobStates.ts); the state diagram of docs/current-surface.md is checked against
 * it, and the definition itself is checked for sense (every state reachable, every unfinished state has a way out,
 * cancel from every unfinished state).
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import {
  acceptsAction,
  JOB_STATUSES,
  JOB_TRANSITIONS,
  jobStateDiagram,
  parseReplyRequest,
  TERMINAL_JOB_STATUSES,
} from '../../workflows/jobStates';

const readme = readFileSync(path.resolve(__dirname, '../../docs/current-surface.md'), 'utf8');

it('the documented job state diagram is the one generated from JOB_TRANSITIONS', () => {
  const match = /<!-- job-states:start -->\s*```mermaid\n([\s\S]*?)\n```\s*<!-- job-states:end -->/.exec(readme);
  expect(match).not.toBeNull();
  expect(match![1]).toBe(jobStateDiagram());
});

it('every state is reachable, unfinished states can move on and be cancelled, finished ones cannot', () => {
  const reachable = new Set(['queued', ...JOB_TRANSITIONS.map((t) => t.to)]);
  expect([...reachable].sort()).toEqual([...JOB_STATUSES].sort());
  for (const s of JOB_STATUSES) {
    const out = JOB_TRANSITIONS.filter((t) => t.from === s);
    if (TERMINAL_JOB_STATUSES.includes(s)) expect(out).toEqual([]);
    else {
      expect(out.length).toBeGreaterThan(0);
      expect(acceptsAction(s, 'cancel')).toBe(true);
    }
  }
  expect(acceptsAction('awaiting_review', 'approve')).toBe(true);
  expect(acceptsAction('blocked', 'approve')).toBe(false);
  expect(acceptsAction('running', 'resume')).toBe(false);
});

it('the reply protocol: review, input (with the question), or neither', () => {
  expect(parseReplyRequest('Done. [[request_review]]')).toEqual({ kind: 'review' });
  expect(parseReplyRequest('Hm [[request_input: Which city? ]]')).toEqual({ kind: 'input', question: 'Which city?' });
  expect(parseReplyRequest('All done.')).toEqual({ kind: 'none' });
  expect(parseReplyRequest('[[request_review]] [[request_input: x]]')).toEqual({ kind: 'input', question: 'x' });
});
