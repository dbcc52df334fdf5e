/**
 * Tasks: creation, filtered lists, updates that follow TASK_TRANSITIONS, deletion. Every member of the
 * organization sees every task; anyone may claim an unassigned one (assign it to themselves). Deletion is for the
 * creator and organization owners/admins.
 */
import type { AuthContext } from './tokens';
import { ConflictError, ForbiddenError, NotFoundError, ValidationError } from '../lib/errors';
import { paginate } from '../lib/pagination';
import { recordEvent, type EventDeps } from './serviceEvents';
import { Agent, Membership, Space, Task, TASK_TRANSITIONS, type TaskDoc, type TaskStatus } from '../models';

const NOT_FOUND = 'Task not found';

export interface TaskCreateInput {
  title: string;
  description?: string;
  priority?: string;
  assignTo?: string | null;
  spaceId?: string;
  /** The mission the task belongs to (commands/missions.ts checks it first). */
  missionId?: string;
}

export interface TaskUpdateInput {
  title?: string;
  description?: string;
  priority?: string;
  assignTo?: string | null;
  status?: TaskStatus;
}

/**
 * Resolves an assignee: an agent the caller can see in its organization, or a member of it.
 * @returns the assignee type, or null for "unassigned".
 */
async function resolveAssignee(
  auth: AuthContext,
  assignTo: string | null | undefined
): Promise<'agent' | 'user' | null> {
  if (assignTo === null || assignTo === undefined || assignTo === '') return null;
  const agent = await Agent.findOne({ _id: assignTo, organizationId: auth.organizationId, archived: false }).lean();
  if (agent && (agent.visibility !== 'private' || agent.userId === auth.userId)) return 'agent';
  if (await Membership.exists({ organizationId: auth.organizationId, userId: assignTo })) return 'user';
  throw new ValidationError('Invalid assignTo: no agent or user with this id in the organization');
}

async function checkSpace(auth: AuthContext, spaceId: string | undefined): Promise<void> {
  if (spaceId === undefined) return;
  const space = await Space.findOne({ _id: spaceId, organizationId: auth.organizationId, deletedAt: null }).lean();
  if (!space || (space.visibility === 'private' && space.ownerId !== auth.userId)) {
    throw new ValidationError('Invalid spaceId: space not found');
  }
}

/**
 * @param deps the dispatcher of its service events.
 * @param auth the caller (recorded as createdBy).
 * @param input validated fields.
 * @returns the new task (status pending).
 */
export async function createTask(deps: EventDeps, auth: AuthContext, input: TaskCreateInput): Promise<TaskDoc> {
  const [assigneeType] = await Promise.all([resolveAssignee(auth, input.assignTo), checkSpace(auth, input.spaceId)]);
  const task = await Task.create({
    organizationId: auth.organizationId,
    title: input.title,
    description: input.description ?? '',
    priority: input.priority ?? 'medium',
    assignedTo: assigneeType ? input.assignTo : null,
    assigneeType,
    spaceId: input.spaceId ?? null,
    missionId: input.missionId ?? null,
    createdBy: auth.userId,
  });
  const doc = task.toObject() as TaskDoc;
  await recordTaskEvents(deps, null, doc);
  return doc;
}

/**
 * @param task a task.
 * @returns the `data.task` of its service events.
 */
export function taskEventData(task: TaskDoc): Record<string, unknown> {
  return {
    id: task._id,
    title: task.title,
    status: task.status,
    priority: task.priority,
    assignedTo: task.assignedTo ?? null,
    spaceId: task.spaceId ?? null,
  };
}

/**
 * Records the service events of a task change (docs/current-surface.md "Webhooks"): created, or updated plus
 * status_changed / completed / assigned when those moved.
 * @param deps the dispatcher of the events.
 * @param before the task before the change (null: created).
 * @param after the task after it.
 */
export async function recordTaskEvents(deps: EventDeps, before: TaskDoc | null, after: TaskDoc): Promise<void> {
  const organizationId = after.organizationId;
  const task = taskEventData(after);
  if (before === null) await recordEvent({ type: 'task.created', organizationId, data: { task } }, deps);
  else {
    await recordEvent({ type: 'task.updated', organizationId, data: { task } }, deps);
    if (before.status !== after.status) {
      await recordEvent(
        {
          type: 'task.status_changed',
          organizationId,
          data: { task, previousStatus: before.status },
        },
        deps
      );
      if (after.status === 'completed')
        await recordEvent({ type: 'task.completed', organizationId, data: { task } }, deps);
    }
  }
  if (after.assignedTo && after.assignedTo !== (before?.assignedTo ?? null))
    await recordEvent(
      {
        type: 'task.assigned',
        organizationId,
        data: { task, previousAssignee: before?.assignedTo ?? null },
      },
      deps
    );
}

/**
 * @param auth the caller.
 * @param filters status, priority, assignedTo, spaceId, missionId (combined with AND); `unassigned: true` keeps the
 *   tasks assigned to nobody.
 * @param page limit and cursor.
 * @returns one page of tasks, newest first.
 */
export async function listTasks(
  auth: AuthContext,
  filters: {
    status?: string;
    priority?: string;
    assignedTo?: string;
    spaceId?: string;
    missionId?: string;
    unassigned?: boolean;
  },
  page: { limit: number; cursor?: string }
): Promise<{ items: TaskDoc[]; nextCursor: string | null }> {
  const filter: Record<string, string | null> = { organizationId: auth.organizationId };
  for (const key of ['status', 'priority', 'assignedTo', 'spaceId', 'missionId'] as const) {
    const value = filters[key];
    if (value !== undefined) filter[key] = value;
  }
  if (filters.unassigned === true) {
    if (filters.assignedTo !== undefined) throw new ValidationError('Use either assignedTo or unassigned, not both');
    filter.assignedTo = null;
  }
  return paginate<TaskDoc>(Task, filter, page);
}

/**
 * @param auth the caller.
 * @param id task id.
 * @returns the task of the caller's organization.
 */
export async function findTask(auth: AuthContext, id: string): Promise<TaskDoc> {
  const task = await Task.findOne({ _id: id, organizationId: auth.organizationId }).lean<TaskDoc>();
  if (!task) throw new NotFoundError(NOT_FOUND);
  return task;
}

/**
 * Applies changes; a status change must be an allowed transition (completed sets completedAt).
 * @param deps the dispatcher of its service events.
 * @param auth the caller.
 * @param id task id.
 * @param changes validated fields.
 * @returns the updated task.
 */
export async function updateTask(
  deps: EventDeps,
  auth: AuthContext,
  id: string,
  changes: TaskUpdateInput
): Promise<TaskDoc> {
  const task = await findTask(auth, id);
  const set: Record<string, unknown> = {};
  for (const key of ['title', 'description', 'priority'] as const)
    if (changes[key] !== undefined) set[key] = changes[key];
  if (changes.assignTo !== undefined) {
    const assigneeType = await resolveAssignee(auth, changes.assignTo);
    set.assignedTo = assigneeType ? changes.assignTo : null;
    set.assigneeType = assigneeType;
  }
  if (changes.status !== undefined && changes.status !== task.status) {
    const from = task.status as TaskStatus;
    if (!TASK_TRANSITIONS[from].includes(changes.status)) {
      throw new ValidationError(`Invalid status transition from ${from} to ${changes.status}`);
    }
    set.status = changes.status;
    if (changes.status === 'completed') set.completedAt = new Date();
  }
  if (Object.keys(set).length === 0) return task;
  // Conditional on the status read above, so two concurrent moves cannot both apply.
  const updated = await Task.findOneAndUpdate(
    { _id: id, organizationId: auth.organizationId, status: task.status },
    { $set: set },
    { new: true }
  ).lean<TaskDoc>();
  if (!updated) throw new ConflictError('Task was changed by another request; read it and retry');
  await recordTaskEvents(deps, task, updated);
  return updated;
}

/**
 * Deletes a task (creator or organization owner/admin).
 * @param auth the caller.
 * @param id task id.
 */
export async function deleteTask(auth: AuthContext, id: string): Promise<void> {
  const task = await findTask(auth, id);
  if (task.createdBy !== auth.userId && auth.role === 'member') throw new ForbiddenError();
  await Task.deleteOne({ _id: id, organizationId: auth.organizationId });
}
