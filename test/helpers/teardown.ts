/**
 * What a test file opens for all its tests (its database, apps, execution stacks), closed after them in the reverse
 * order of opening: the last opened closes first, so a worker stops while the app it serves, the fake model it calls
 * and the database it writes to are still there.
 *
 * One `afterAll` hook runs every closer, registered by the first {@link closeAfterAll} call: the file's helpers
 * (useTestDatabase, useTestApp, useServedTestApp, useExecutionStack) are called at the top of the file, before its
 * own hooks. A hook the file declares itself runs after these closers. What a `describe` block opens for its own
 * tests is closed by that block's `afterAll` (useTestWorker), which runs before the file's.
 */

const closers: Array<() => unknown> = [];
let registered = false;
/** Longest wait for all of a file's closers together (a worker's shutdown waits for its running activities). */
const TEARDOWN_TIMEOUT_MS = 60_000;

/**
 * Closes something after the file's tests, before whatever was registered earlier.
 * @param close what closes it (it may find its resource never opened, when a `beforeAll` failed).
 */
export function closeAfterAll(close: () => unknown): void {
  if (!registered) {
    registered = true;
    afterAll(async () => {
      const errors: unknown[] = [];
      for (let c = closers.pop(); c; c = closers.pop()) {
        try {
          await c();
        } catch (err) {
          errors.push(err);
        }
      }
      if (errors.length > 0) throw errors[0];
    }, TEARDOWN_TIMEOUT_MS);
  }
  closers.push(close);
}
