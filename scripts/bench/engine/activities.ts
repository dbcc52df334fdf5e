/** Activities of the bare execution (`npm run bench:engine`): they only note when the first one began. */

/** performance.now() at which each run's activity began, by run id (the client and the worker share a process). */
export const beganAt = new Map<string, number>();

/** @param id the run. */
export async function began(id: string): Promise<void> {
  beganAt.set(id, performance.now());
}

/** @param _id the run. */
export async function finished(_id: string): Promise<void> {}
