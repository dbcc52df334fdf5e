/**
 * What a person may do with a job in each of its states: the one place the console's inbox and job page read the
 * buttons they offer from. It mirrors the service's job state machine (workflows/jobStates.ts `JOB_TRANSITIONS`,
 * which the console cannot import): test/console/jobActions.test.ts checks both agree for every state and action.
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

export const JOB_ACTIONS = ['approve', 'iterate', 'resume', 'cancel'] as const;
export type JobAction = (typeof JOB_ACTIONS)[number];

/** The states each action applies in (POST /api/jobs/{id}/<action>; any other state answers 409). */
export const ACTION_STATES: Record<JobAction, readonly JobStatus[]> = {
  approve: ['awaiting_review'],
  iterate: ['awaiting_review'],
  resume: ['blocked'],
  cancel: ['queued', 'running', 'awaiting_review', 'blocked', 'needs_attention'],
};

/** States in which the job waits for a person (the inbox shows them first). */
export const WAITING_STATUSES: readonly JobStatus[] = ['awaiting_review', 'blocked', 'needs_attention'];

/** The inbox's order of states: waiting for a person first, then work under way, then finished work. */
export const INBOX_ORDER: readonly JobStatus[] = [
  'awaiting_review',
  'blocked',
  'needs_attention',
  'running',
  'queued',
  'failed',
  'completed',
  'cancelled',
];

/** The text field each action sends, and whether it is required. */
export const ACTION_FIELD: Record<JobAction, { field: 'next_step' | 'feedback' | 'input'; required: boolean } | null> =
  {
    approve: { field: 'next_step', required: false },
    iterate: { field: 'feedback', required: true },
    resume: { field: 'input', required: true },
    cancel: null,
  };

/**
 * @param status a job's state.
 * @returns the actions a person may take in it, in the order the page offers them.
 */
export function allowedActions(status: JobStatus): JobAction[] {
  return JOB_ACTIONS.filter((a) => ACTION_STATES[a].includes(status));
}

/**
 * @param action an action.
 * @param text what the person typed for its field.
 * @returns the request body, or an error sentence when a required field is empty.
 */
export function actionBody(action: JobAction, text: string): { body: Record<string, string> } | { error: string } {
  const spec = ACTION_FIELD[action];
  if (!spec) return { body: {} };
  const value = text.trim();
  if (!value) {
    if (!spec.required) return { body: {} };
    return { error: action === 'iterate' ? 'Write the feedback for the next iteration.' : 'Write the answer first.' };
  }
  return { body: { [spec.field]: value } };
}

/** @returns a state as people read it (`awaiting_review` → `awaiting review`). */
export function statusLabel(status: string): string {
  return status.replace(/_/g, ' ');
}

/**
 * @returns a new Idempotency-Key for one decision (a retry of the same decision sends the same key). A UUID from
 * `crypto.randomUUID()`, or from `crypto.getRandomValues` where the page is not a secure context (plain http).
 */
export function newIdempotencyKey(): string {
  if (typeof crypto.randomUUID === 'function') return crypto.randomUUID();
  const b = crypto.getRandomValues(new Uint8Array(16));
  b[6] = (b[6] & 0x0f) | 0x40;
  b[8] = (b[8] & 0x3f) | 0x80;
  const h = [...b].map((x) => x.toString(16).padStart(2, '0')).join('');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

/**
 * @param iso a time (ISO 8601), or null.
 * @param now the time now (ms).
 * @returns how long ago it was, as people say it (`just now`, `5 min ago`, `3 h ago`, `2 days ago`).
 */
export function age(iso: string | null, now: number): string {
  if (!iso) return '';
  const s = Math.max(0, Math.round((now - Date.parse(iso)) / 1000));
  if (!Number.isFinite(s)) return '';
  if (s < 60) return 'just now';
  if (s < 3600) return `${Math.floor(s / 60)} min ago`;
  if (s < 86_400) return `${Math.floor(s / 3600)} h ago`;
  const d = Math.floor(s / 86_400);
  return d === 1 ? '1 day ago' : `${d} days ago`;
}
