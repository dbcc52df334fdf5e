/**
 * Typed reviews [docs/decisions.md "Typed reviews, deadlines and escalation (issue 40)"]: what a job waiting for a
 * person waits for (the actions it takes, and a JSON Schema per action's payload), and what happens when nobody
 * answers in time. Pure data and functions (no imports): the job workflow, the api, the models and the presenters
 * read them from here.
 */

/** What a review's deadline does when it passes; each fires once per review. */
export const REVIEW_TIMEOUT_POLICIES = ['remind', 'escalate', 'auto_approve', 'auto_reject', 'cancel'] as const;
export type ReviewTimeoutPolicy = (typeof REVIEW_TIMEOUT_POLICIES)[number];

/** What a declared (custom) action does to the job: finish it, or run another iteration with the payload. */
export const REVIEW_ACTION_EFFECTS = ['complete', 'iterate'] as const;
export type ReviewActionEffect = (typeof REVIEW_ACTION_EFFECTS)[number];

/** The built-in actions a person answers a job with, and the payload each one takes. */
export const BUILTIN_REVIEW_ACTIONS = ['approve', 'iterate', 'resume'] as const;
export type BuiltinReviewAction = (typeof BUILTIN_REVIEW_ACTIONS)[number];

/** Names of declared actions: lower-case words, not a built-in one nor `cancel`. */
export const REVIEW_ACTION_NAME = '^[a-z][a-z0-9_]{0,39}$';
/** Most actions one review declares. */
export const MAX_REVIEW_ACTIONS = 10;
/** Longest review deadline: 30 days. */
export const MAX_REVIEW_TIMEOUT_SECONDS = 30 * 24 * 3600;

const text = (description: string) => ({ type: 'string', minLength: 1, maxLength: 100_000, description });

/** The payload schema of each built-in action: its route's body (SPEC's fields). */
export const BUILTIN_REVIEW_SCHEMAS: Record<BuiltinReviewAction, Record<string, unknown>> = {
  approve: {
    type: 'object',
    additionalProperties: false,
    properties: { next_step: text('Optional: the next step; another iteration runs with it') },
  },
  iterate: {
    type: 'object',
    additionalProperties: false,
    required: ['feedback'],
    properties: { feedback: text('The reviewer’s feedback: the next iteration’s input') },
  },
  resume: {
    type: 'object',
    additionalProperties: false,
    required: ['input'],
    properties: { input: text('The input the agent asked for') },
  },
};

/** A declared action: its name, its payload's schema, and what it does. */
export interface ReviewActionSpec {
  name: string;
  schema: Record<string, unknown>;
  effect: ReviewActionEffect;
  description?: string;
}

/** A job's review declaration, normalized (the workflow's input; stored on the job). */
export interface ReviewSpec {
  /** Declared actions besides the built-in ones. */
  actions: ReviewActionSpec[];
  /** Who the review waits for (a user id); null: anyone of the organization (listed under the creator). */
  assignee: string | null;
  /** Seconds a review may wait; null: no deadline. */
  timeoutSeconds: number | null;
  onTimeout: ReviewTimeoutPolicy | null;
  /** The user an `escalate` reassigns the review to. */
  escalateTo: string | null;
}

/** The actions a job waiting in `status` takes (cancel is always possible and never listed). */
export function pendingActions(
  status: string,
  spec: ReviewSpec | null | undefined
): { name: string; schema: Record<string, unknown>; effect?: ReviewActionEffect; description?: string }[] {
  if (status === 'blocked') return [{ name: 'resume', schema: BUILTIN_REVIEW_SCHEMAS.resume }];
  if (status !== 'awaiting_review') return [];
  return [
    { name: 'approve', schema: BUILTIN_REVIEW_SCHEMAS.approve },
    { name: 'iterate', schema: BUILTIN_REVIEW_SCHEMAS.iterate },
    ...(spec?.actions ?? []),
  ];
}

/**
 * @param value a review timeout: whole seconds, or an ISO 8601 duration of days, hours, minutes and seconds
 *   (`PT2S`, `PT1H30M`, `P1D`, `P1DT12H`; no years, months or weeks: their length varies).
 * @returns the seconds, or null when `value` is neither.
 */
export function parseReviewTimeout(value: unknown): number | null {
  if (typeof value === 'number') return Number.isInteger(value) && value > 0 ? value : null;
  if (typeof value !== 'string') return null;
  const m = /^P(?:(\d{1,3})D)?(?:T(?:(\d{1,5})H)?(?:(\d{1,6})M)?(?:(\d{1,7}(?:\.\d{1,3})?)S)?)?$/.exec(value);
  if (!m || value === 'P' || value.endsWith('T')) return null;
  const seconds = Number(m[1] ?? 0) * 86400 + Number(m[2] ?? 0) * 3600 + Number(m[3] ?? 0) * 60 + Number(m[4] ?? 0);
  return seconds > 0 ? seconds : null;
}

/** The sort key of a review without a deadline in the inbox: after every real deadline. */
export const NO_REVIEW_DEADLINE = new Date('9999-12-31T23:59:59.000Z');
