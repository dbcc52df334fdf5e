/**
 * A task run (POST /api/v1/tasks/{id}/run; docs/decisions.md "Task runs"): the task's agent executes its title and
 * description; the execution records the task (`taskId`), and the task follows the state machine as the run starts
 * and ends:
 * - start: `pending` → `in_progress`, claimed before the execution starts (with the execution's id decided first), so
 *   two runs at once start one execution (the other: 409), and a run that finishes at once still finds its claim;
 * - end (the execution's finish, activities/executionFinish.ts): completed → `completed` (completedAt set); failed
 *   or cancelled → `pending` again (SPEC: in_progress → pending, "task paused"), so it can be run again. Only while
 *   the task is still `in_progress` because of this very execution (`runExecutionId`).
 */
import { newExecutionId } from '../lib/ids';
import { ConflictError } from '../lib/errors';
import { Task, type ExecutionDoc, type TaskDoc } from '../models';
import { startExecution, type ExecutionDeps } from './executionStart';
import type { EventDeps } from './serviceEvents';
import { findTask, recordTaskEvents } from './tasks';
import type { AuthContext } from './tokens';

/**
 * @param task the task.
 * @returns what its agent is asked: the title, then the description when there is one.
 */
export function taskRunMessage(task: Pick<TaskDoc, 'title' | 'description'>): string {
  const description = (task.description ?? '').trim();
  return description ? `${task.title}\n\n${description}` : task.title;
}

/**
 * Runs a task with the agent it is assigned to.
 * @param deps configuration, Temporal, the admission of executions and the dispatcher of service events.
 * @param auth the caller (the execution runs as the caller, like an execute request).
 * @param id the task.
 * @returns the started execution and the task as it now is (`in_progress`).
 * @throws NotFoundError for another organization's or an unknown task.
 * @throws ConflictError when the task is not assigned to an agent, or is not `pending`.
 */
export async function runTask(
  deps: ExecutionDeps,
  auth: AuthContext,
  id: string
): Promise<{ execution: ExecutionDoc; task: TaskDoc }> {
  const task = await findTask(auth, id);
  if (task.assigneeType !== 'agent' || !task.assignedTo)
    throw new ConflictError('Only a task assigned to an agent can be run');
  if (task.status !== 'pending') throw new ConflictError(`Only a pending task can be run (this one is ${task.status})`);
  const executionId = newExecutionId();
  const claimed = await Task.findOneAndUpdate(
    { _id: task._id, organizationId: auth.organizationId, status: 'pending' },
    { $set: { status: 'in_progress', runExecutionId: executionId } },
    { new: true }
  ).lean<TaskDoc>();
  if (!claimed) throw new ConflictError('Task was changed by another request; read it and retry');
  let execution: ExecutionDoc;
  try {
    execution = await startExecution(deps, auth, task.assignedTo, {
      message: taskRunMessage(task),
      ...(task.spaceId ? { spaceId: task.spaceId } : {}),
      source: 'v1',
      taskId: task._id,
      executionId,
    });
  } catch (err) {
    // Nothing runs: the task goes back to pending (unless something else moved it meanwhile).
    await Task.updateOne(
      { _id: task._id, organizationId: auth.organizationId, status: 'in_progress', runExecutionId: executionId },
      { $set: { status: 'pending', runExecutionId: null } }
    );
    throw err;
  }
  await recordTaskEvents(deps, task, claimed);
  return { execution, task: claimed };
}

/**
 * Moves a task on when the execution running it ends (called by the execution's finish; idempotent: a retried
 * finish finds the task moved already and does nothing).
 * @param deps the dispatcher of the task's service events.
 * @param exec the execution (its `taskId`, organization and id).
 * @param status how it ended.
 */
export async function finishTaskRun(
  deps: EventDeps,
  exec: Pick<ExecutionDoc, '_id' | 'organizationId' | 'taskId'>,
  status: 'completed' | 'failed' | 'cancelled'
): Promise<void> {
  if (!exec.taskId) return;
  const filter = {
    _id: exec.taskId,
    organizationId: exec.organizationId,
    status: 'in_progress',
    runExecutionId: exec._id,
  };
  const before = await Task.findOne(filter).lean<TaskDoc>();
  if (!before) return;
  const completed = status === 'completed';
  const after = await Task.findOneAndUpdate(
    filter,
    {
      $set: {
        status: completed ? 'completed' : 'pending',
        runExecutionId: null,
        ...(completed ? { completedAt: new Date() } : {}),
      },
    },
    { new: true }
  ).lean<TaskDoc>();
  if (after) await recordTaskEvents(deps, before, after);
}
