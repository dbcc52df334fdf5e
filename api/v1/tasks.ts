/**
 * /api/v1/tasks: create, list with filters, read, update (status transitions), delete.
 * PATCH and DELETE are the operations the spec announces; docs/decisions.md "Tasks" describes them.
 */
import {
  createTask,
  deleteTask,
  findTask,
  listTasks,
  updateTask,
  type TaskCreateInput,
  type TaskUpdateInput,
} from '../../commands/tasks';
import { presentTask } from '../../presenters/task';
import { input, type RouteSpec } from '../route';
import { idParams, successMessage } from '../schemas';
import { taskCreateBody, taskListQuery, taskListResponse, taskResponse, taskUpdateBody } from './tasks.schema';

const tags = ['Tasks'];

interface TaskListQuery {
  limit: number;
  cursor?: string;
  status?: string;
  priority?: string;
  assignedTo?: string;
  spaceId?: string;
}

/** @returns the route declarations. */
export function taskRoutes(): RouteSpec[] {
  return [
    {
      method: 'get',
      path: '/tasks',
      summary: 'List tasks; status, priority, assignedTo and spaceId filters combine',
      tags,
      auth: 'v1',
      query: taskListQuery,
      responses: { 200: taskListResponse },
      handler: async (ctx) => {
        const { limit, cursor, ...filters } = input<unknown, TaskListQuery>(ctx).query;
        const { items, nextCursor } = await listTasks(ctx.state.auth, filters, { limit, cursor });
        ctx.body = { success: true, tasks: items.map(presentTask), nextCursor };
      },
    },
    {
      method: 'post',
      path: '/tasks',
      summary: 'Create a task (status pending)',
      tags,
      auth: 'v1',
      body: taskCreateBody,
      responses: { 200: taskResponse },
      handler: async (ctx) => {
        const task = await createTask(ctx.state.auth, input<TaskCreateInput>(ctx).body);
        ctx.body = { success: true, task: presentTask(task) };
      },
    },
    {
      method: 'get',
      path: '/tasks/:id',
      summary: 'Read a task',
      tags,
      auth: 'v1',
      params: idParams,
      responses: { 200: taskResponse },
      handler: async (ctx) => {
        ctx.body = { success: true, task: presentTask(await findTask(ctx.state.auth, input(ctx).params.id)) };
      },
    },
    {
      method: 'patch',
      path: '/tasks/:id',
      summary: 'Update a task; status moves follow the transition table',
      tags,
      auth: 'v1',
      params: idParams,
      body: taskUpdateBody,
      responses: { 200: taskResponse },
      handler: async (ctx) => {
        const task = await updateTask(ctx.state.auth, input(ctx).params.id, input<TaskUpdateInput>(ctx).body);
        ctx.body = { success: true, task: presentTask(task) };
      },
    },
    {
      method: 'delete',
      path: '/tasks/:id',
      summary: 'Delete a task (creator or organization owner/admin)',
      tags,
      auth: 'v1',
      params: idParams,
      responses: { 200: successMessage },
      handler: async (ctx) => {
        await deleteTask(ctx.state.auth, input(ctx).params.id);
        ctx.body = { success: true, message: 'Task deleted successfully' };
      },
    },
  ];
}
