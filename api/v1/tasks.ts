/**
 * /api/v1/tasks: create, list with filters, read, update (status transitions), delete.
 * PATCH and DELETE are the operations the spec announces; docs/decisions.md "Tasks" describes them.
 */
import { runTask } from '../../commands/taskRuns';
import { createTask, deleteTask, findTask, listTasks, updateTask } from '../../commands/tasks';
import { presentTask } from '../../presenters/task';
import type { ExecutionRouteDeps } from '../deps';
import { route, type RouteSpec } from '../route';
import { idParams, successMessage } from '../schemas';
import {
  taskCreateBody,
  taskListQuery,
  taskListResponse,
  taskResponse,
  taskRunResponse,
  taskUpdateBody,
} from './tasks.schema';

const tags = ['Tasks'];

/**
 * @param deps the dispatcher of the tasks' service events; Temporal and the admission of executions (runs).
 * @returns the route declarations.
 */
export function taskRoutes(deps: ExecutionRouteDeps): RouteSpec[] {
  return [
    route({
      method: 'get',
      path: '/tasks',
      summary: 'List tasks; status, priority, assignedTo (or unassigned) and spaceId filters combine',
      tags,
      auth: 'v1',
      query: taskListQuery,
      responses: { 200: taskListResponse },
      handler: async (ctx, { query }) => {
        const { limit, cursor, ...filters } = query;
        const { items, nextCursor } = await listTasks(ctx.state.auth, filters, { limit, cursor });
        ctx.body = { success: true, tasks: items.map(presentTask), nextCursor };
      },
    }),
    route({
      method: 'post',
      path: '/tasks',
      summary: 'Create a task (status pending)',
      tags,
      auth: 'v1',
      body: taskCreateBody,
      responses: { 200: taskResponse },
      handler: async (ctx, { body }) => {
        const task = await createTask(deps, ctx.state.auth, body);
        ctx.body = { success: true, task: presentTask(task) };
      },
    }),
    route({
      method: 'get',
      path: '/tasks/:id',
      summary: 'Read a task',
      tags,
      auth: 'v1',
      params: idParams,
      responses: { 200: taskResponse },
      handler: async (ctx, { params }) => {
        ctx.body = { success: true, task: presentTask(await findTask(ctx.state.auth, params.id)) };
      },
    }),
    route({
      method: 'patch',
      path: '/tasks/:id',
      summary: 'Update a task; status moves follow the transition table',
      tags,
      auth: 'v1',
      params: idParams,
      body: taskUpdateBody,
      responses: { 200: taskResponse },
      handler: async (ctx, { params, body }) => {
        const task = await updateTask(deps, ctx.state.auth, params.id, body);
        ctx.body = { success: true, task: presentTask(task) };
      },
    }),
    route({
      method: 'post',
      path: '/tasks/:id/run',
      summary:
        'Run a pending task with the agent it is assigned to: an execution of its title and description (409 otherwise); the task moves to in_progress, then completed or back to pending as the run ends',
      tags,
      auth: 'v1',
      params: idParams,
      responses: { 200: taskRunResponse },
      errors: [409],
      handler: async (ctx, { params }) => {
        const { execution, task } = await runTask(deps, ctx.state.auth, params.id);
        ctx.body = { success: true, executionId: execution._id, task: presentTask(task) };
      },
    }),
    route({
      method: 'delete',
      path: '/tasks/:id',
      summary: 'Delete a task (creator or organization owner/admin)',
      tags,
      auth: 'v1',
      params: idParams,
      responses: { 200: successMessage },
      handler: async (ctx, { params }) => {
        await deleteTask(ctx.state.auth, params.id);
        ctx.body = { success: true, message: 'Task deleted successfully' };
      },
    }),
  ];
}
