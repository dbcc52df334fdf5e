/**
 * A task: a work item assigned to an agent or a user, or unassigned (claimable by any member).
 * Status moves follow TASK_TRANSITIONS (SPEC "Task status").
 */
import mongoose, { type InferSchemaType } from 'mongoose';
import { newTaskId } from '../lib/ids';

export const TASK_STATUSES = ['pending', 'in_progress', 'completed', 'cancelled'] as const;
export const TASK_PRIORITIES = ['low', 'medium', 'high', 'urgent'] as const;
export type TaskStatus = (typeof TASK_STATUSES)[number];

/** Allowed next states; `completed` and `cancelled` are terminal. */
export const TASK_TRANSITIONS: Record<TaskStatus, readonly TaskStatus[]> = {
  pending: ['in_progress', 'cancelled'],
  in_progress: ['completed', 'cancelled', 'pending'],
  completed: [],
  cancelled: [],
};

const schema = new mongoose.Schema(
  {
    _id: { type: String, default: newTaskId },
    organizationId: { type: String, required: true },
    title: { type: String, required: true },
    description: { type: String, default: '' },
    status: { type: String, enum: TASK_STATUSES, default: 'pending' },
    priority: { type: String, enum: TASK_PRIORITIES, default: 'medium' },
    assignedTo: { type: String, default: null },
    assigneeType: { type: String, enum: ['agent', 'user', null], default: null },
    spaceId: { type: String, default: null },
    createdBy: { type: String, required: true },
    /** The mission the task belongs to (POST /api/missions/{id}/tasks), if any. */
    missionId: { type: String, default: null },
    completedAt: { type: Date, default: null },
    /**
     * The execution running the task (POST /api/v1/tasks/{id}/run) while it is `in_progress` because of it; null
     * otherwise. Its finish moves the task on only when it is still this one (commands/taskRuns.ts).
     */
    runExecutionId: { type: String, default: null },
  },
  { timestamps: true, versionKey: false }
);
schema.index({ organizationId: 1, createdAt: -1, _id: -1 });
schema.index({ organizationId: 1, status: 1, assignedTo: 1 });
// A mission's tasks (its runs read the open ones).
schema.index({ organizationId: 1, missionId: 1, createdAt: -1, _id: -1 });

export type TaskDoc = InferSchemaType<typeof schema> & { _id: string; createdAt: Date; updatedAt: Date };
export const Task = mongoose.model('Task', schema, 'tasks');
