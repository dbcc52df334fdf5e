/**
 * The event types of the organization's activity stream (GET /api/events), which lib/useOrganizationEvents.ts listens
 * to; test/console/mirrors.test.ts compares the list with the server's.
 */
/** Every event type the service records (commands/serviceEvents.ts SERVICE_EVENT_TYPES). */
export const ORGANIZATION_EVENT_TYPES = [
  'job.created',
  'job.status_changed',
  'job.review_requested',
  'job.review_overdue',
  'job.review_escalated',
  'job.done',
  'mission.run_started',
  'mission.run_skipped',
  'mission.updated',
  'execution.completed',
  'execution.failed',
  'chat.status_changed',
  'task.created',
  'task.updated',
  'task.status_changed',
  'task.completed',
  'task.assigned',
  'repo.clone_started',
  'repo.clone_completed',
  'repo.clone_failed',
  'budget.threshold',
] as const;

/**
 * @param type an event type.
 * @param types prefixes or whole types.
 * @returns whether the type matches one of them.
 */
export function matchesTypes(type: string, types: readonly string[]): boolean {
  return types.some((t) => type.startsWith(t));
}
