/**
 * The task state machine as the console offers it (SPEC "Task status"): the one place the Tasks page derives its
 * buttons from. It mirrors the server's TASK_TRANSITIONS (models/Task.ts); test/console/mirrors.test.ts compares
 * the two, so a change on either side fails the build's tests.
 */
export const TASK_STATUSES = ['pending', 'in_progress', 'completed', 'cancelled'] as const;
export type TaskStatus = (typeof TASK_STATUSES)[number];

/** Allowed next states; `completed` and `cancelled` are terminal. */
export const TASK_TRANSITIONS: Record<TaskStatus, readonly TaskStatus[]> = {
  pending: ['in_progress', 'cancelled'],
  in_progress: ['completed', 'cancelled', 'pending'],
  completed: [],
  cancelled: [],
};

/** The button that moves a task to a state. */
const MOVE_LABELS: Record<TaskStatus, string> = {
  pending: 'Back to pending',
  in_progress: 'Start',
  completed: 'Complete',
  cancelled: 'Cancel task',
};

/** How a state reads. */
export const STATUS_LABELS: Record<TaskStatus, string> = {
  pending: 'Pending',
  in_progress: 'In progress',
  completed: 'Completed',
  cancelled: 'Cancelled',
};

/**
 * @param status a task's state (anything else: no move).
 * @returns the moves offered from it, each with its button's label.
 */
export function nextMoves(status: string): { to: TaskStatus; label: string }[] {
  const from = (TASK_STATUSES as readonly string[]).includes(status) ? (status as TaskStatus) : undefined;
  return from ? TASK_TRANSITIONS[from].map((to) => ({ to, label: MOVE_LABELS[to] })) : [];
}

/**
 * @param task a task's status, assignee kind and assignee.
 * @param userId the signed-in user.
 * @returns whether the user may claim it: unassigned and still open.
 */
export function canClaim(task: { status: string; assignedTo?: string | null }, userId: string | undefined): boolean {
  return !!userId && !task.assignedTo && (task.status === 'pending' || task.status === 'in_progress');
}

/**
 * @param task a task's status and assignee kind.
 * @returns whether it can be run by its agent now (POST /api/v1/tasks/{id}/run answers 409 otherwise).
 */
export function canRun(task: { status: string; assigneeType?: string | null }): boolean {
  return task.assigneeType === 'agent' && task.status === 'pending';
}
