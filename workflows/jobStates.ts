/**
 * The job state machine, defined once [docs/decisions.md "Jobs"]: the states, every transition with what causes
 * it, the actions a client may send in each state, and the protocol by which an agent's reply asks for review or
 * for input. Pure data and functions (no imports): the job workflow, its activities, the api and docs/current-surface.md's
 * state diagram (checked by test/workflows/jobStates.test.ts) all read it from here.
 */

export const JOB_STATUSES = [
  'queued',
  'running',
  'awaiting_review',
  'blocked',
  'needs_attention',
  'completed',
  'failed',
  'cancelled',
] as const;
export type JobStatus = (typeof JOB_STATUSES)[number];

export const TERMINAL_JOB_STATUSES: readonly JobStatus[] = ['completed', 'failed', 'cancelled'];

/** What a client may ask of a job (POST /api/jobs/{id}/<action>). */
export const JOB_ACTIONS = ['approve', 'iterate', 'resume', 'cancel'] as const;
export type JobAction = (typeof JOB_ACTIONS)[number];

/** What the job's own work does (its workflow, after an iteration). */
export type JobEvent =
  | 'start'
  | 'review_requested'
  | 'input_requested'
  | 'reply'
  | 'iteration_failed'
  // Typed reviews (issue 40, workflows/reviews.ts): a declared action, and a review's deadline passing.
  | 'decision'
  | 'review_timeout'
  // Budgets (issue 39, docs/spend.md): a spent budget pauses the job; raising or removing the cap resumes it.
  | 'budget_reached'
  | 'budget_raised';

export interface JobTransition {
  from: JobStatus;
  to: JobStatus;
  on: JobAction | JobEvent;
  /** When an action can lead to two states, what decides (shown on the diagram). */
  when?: string;
}

/** Every transition a job can make. Nothing else moves a job. */
export const JOB_TRANSITIONS: readonly JobTransition[] = [
  { from: 'queued', to: 'running', on: 'start' },
  { from: 'queued', to: 'cancelled', on: 'cancel' },
  { from: 'running', to: 'awaiting_review', on: 'review_requested' },
  { from: 'running', to: 'blocked', on: 'input_requested' },
  { from: 'running', to: 'completed', on: 'reply' },
  { from: 'running', to: 'failed', on: 'iteration_failed' },
  { from: 'running', to: 'cancelled', on: 'cancel' },
  { from: 'awaiting_review', to: 'completed', on: 'approve' },
  { from: 'awaiting_review', to: 'running', on: 'approve', when: 'next_step' },
  { from: 'awaiting_review', to: 'running', on: 'iterate' },
  { from: 'awaiting_review', to: 'cancelled', on: 'cancel' },
  { from: 'blocked', to: 'running', on: 'resume' },
  { from: 'blocked', to: 'cancelled', on: 'cancel' },
  // Typed reviews (issue 40): a declared action, by its effect; a deadline, by its policy.
  { from: 'awaiting_review', to: 'completed', on: 'decision', when: 'complete' },
  { from: 'awaiting_review', to: 'running', on: 'decision', when: 'iterate' },
  { from: 'awaiting_review', to: 'completed', on: 'review_timeout', when: 'auto_approve' },
  { from: 'awaiting_review', to: 'failed', on: 'review_timeout', when: 'auto_reject' },
  { from: 'awaiting_review', to: 'cancelled', on: 'review_timeout', when: 'cancel' },
  // A spent budget pauses the job instead of failing it; raising or removing the cap resumes it (docs/spend.md).
  { from: 'running', to: 'needs_attention', on: 'budget_reached' },
  { from: 'needs_attention', to: 'running', on: 'budget_raised' },
  { from: 'needs_attention', to: 'cancelled', on: 'cancel' },
];

/**
 * @param status the job's current state.
 * @param action what a client asks.
 * @returns whether the action applies in that state.
 */
export function acceptsAction(status: JobStatus, action: JobAction): boolean {
  return JOB_TRANSITIONS.some((t) => t.from === status && t.on === action);
}

/**
 * @param from the state left.
 * @param to the state entered.
 * @returns whether the machine has that transition.
 */
export function isJobTransition(from: JobStatus, to: JobStatus): boolean {
  return JOB_TRANSITIONS.some((t) => t.from === from && t.to === to);
}

/** @returns the Mermaid state diagram of {@link JOB_TRANSITIONS} (docs/current-surface.md's copy is checked against it). */
export function jobStateDiagram(): string {
  const lines = ['stateDiagram-v2', '    [*] --> queued'];
  for (const t of JOB_TRANSITIONS) lines.push(`    ${t.from} --> ${t.to}: ${t.on}${t.when ? ` (${t.when})` : ''}`);
  for (const s of TERMINAL_JOB_STATUSES) lines.push(`    ${s} --> [*]`);
  return lines.join('\n');
}

/**
 * The reply protocol [docs/current-surface.md "Jobs"]: an iteration's reply that contains `[[request_review]]` asks for a human
 * review (→ awaiting_review); one that contains `[[request_input: <question>]]` asks for input (→ blocked, with
 * the question); any other reply finishes the job (→ completed). Input wins when a reply has both.
 */
export const REVIEW_MARKER = '[[request_review]]';
const INPUT_MARKER = /\[\[request_input:\s*([^\]]{0,2000}?)\s*\]\]/;

export type ReplyRequest = { kind: 'review' } | { kind: 'input'; question: string } | { kind: 'none' };

/**
 * @param reply an iteration's reply.
 * @returns what it asks of a human.
 */
export function parseReplyRequest(reply: string): ReplyRequest {
  const input = INPUT_MARKER.exec(reply);
  if (input) return { kind: 'input', question: input[1].trim() };
  if (reply.includes(REVIEW_MARKER)) return { kind: 'review' };
  return { kind: 'none' };
}

/** Told to the model in every job iteration (appended to the agent's system prompt). */
export const JOB_PROTOCOL_PROMPT = [
  'You are working on a job: long-running work toward a goal, reviewed by a human.',
  `When your work is ready for review, end your reply with the marker ${REVIEW_MARKER}.`,
  'When you cannot continue without information from a human, end your reply with',
  '[[request_input: <your question>]].',
  'A reply with neither marker completes the job.',
].join('\n');

/** Why an iteration runs. */
export type IterationReason = 'goal' | 'feedback' | 'input' | 'next_step';

/**
 * @param reason why the iteration runs.
 * @param goal the job's goal.
 * @param text what the human sent (feedback, input, next step).
 * @returns the iteration's user message (earlier iterations are in its session's history).
 */
export function iterationMessage(reason: IterationReason, goal: string, text: string): string {
  switch (reason) {
    case 'goal':
      return goal;
    case 'feedback':
      return `Reviewer feedback:\n${text}`;
    case 'input':
      return `Answer to your question:\n${text}`;
    case 'next_step':
      return `Approved. Next step:\n${text}`;
  }
}
