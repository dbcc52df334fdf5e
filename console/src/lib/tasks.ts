/** The Tasks page's data: the v1 task type, and the keys and calls its lists share. */
import type { paths } from '../api/schema';
import { api, unwrap } from '../api/client';

export type Task = paths['/api/v1/tasks']['get']['responses'][200]['content']['application/json']['tasks'][number];
export type TaskFilters = NonNullable<paths['/api/v1/tasks']['get']['parameters']['query']>;

/** Tasks a page of the API gives (and the console asks for). */
export const TASK_PAGE = 20;

/**
 * @param filters the list's filters (the API's: status, assignedTo, spaceId).
 * @param cursor the previous page's nextCursor.
 * @returns one page of tasks, newest first.
 */
export async function fetchTasks(filters: TaskFilters, cursor: string | undefined) {
  return unwrap(
    await api.GET('/api/v1/tasks', {
      params: { query: { ...filters, limit: TASK_PAGE, ...(cursor ? { cursor } : {}) } },
    })
  );
}
