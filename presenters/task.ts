/** Task → public JSON (SPEC "Task"); optional fields are omitted when unset. */
import type { TaskDoc } from '../models';

/**
 * @param task the stored task.
 * @returns the public record.
 */
export function presentTask(task: TaskDoc): Record<string, unknown> {
  return {
    id: task._id,
    title: task.title,
    description: task.description,
    status: task.status,
    priority: task.priority,
    ...(task.assignedTo ? { assignedTo: task.assignedTo, assigneeType: task.assigneeType } : {}),
    ...(task.spaceId ? { spaceId: task.spaceId } : {}),
    ...(task.missionId ? { missionId: task.missionId } : {}),
    organizationId: task.organizationId,
    createdBy: task.createdBy,
    createdAt: task.createdAt.toISOString(),
    updatedAt: task.updatedAt.toISOString(),
    ...(task.completedAt ? { completedAt: task.completedAt.toISOString() } : {}),
  };
}
