/**
 * Crash points for the fault tests: a process whose environment names a point (`AAS_TEST_CRASH_POINT`) kills itself
 * with SIGKILL when it reaches it, so a test can crash a worker inside a window of a few milliseconds that a kill
 * from outside could not hit (e.g. between a stream event's insert and its head raise: commands/eventLog.ts). Off
 * unless NODE_ENV is `test` (jest sets it, and the test's child processes inherit it): in any other process the
 * variable is not read, and every point is a comparison with undefined.
 */

/** The point this process dies at, read once at start. */
const armed = process.env.NODE_ENV === 'test' ? process.env.AAS_TEST_CRASH_POINT || undefined : undefined;

/** Whether a crash point is armed in this process (callers skip building a point's name when none is). */
export const crashPointsArmed = armed !== undefined;

/** How long a process that reached its point goes on before it dies: what it already sent reaches its sockets. */
const GRACE_MS = 300;

/**
 * Kills this process (SIGKILL, as a crash would) when the test armed this point, after {@link GRACE_MS} (the caller
 * waits meanwhile: it never gets past the point).
 * @param name the point, e.g. `stream-head:exec:3` (an execution stream's events up to seq 3 inserted, head not
 *   raised).
 */
export async function crashPoint(name: string): Promise<void> {
  if (armed !== name) return;
  process.stderr.write(`crash point ${name} reached: killing process ${process.pid}\n`);
  await new Promise((r) => setTimeout(r, GRACE_MS));
  process.kill(process.pid, 'SIGKILL');
  await new Promise(() => undefined);
}
