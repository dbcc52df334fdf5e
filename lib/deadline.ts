/**
 * One hard deadline around any promise: the answer no longer depends on how a driver schedules its retries.
 */

/** Thrown when a deadline passes first. */
export class DeadlineExceededError extends Error {
  constructor(what: string, ms: number) {
    super(`${what} did not answer within ${ms} ms`);
    this.name = 'DeadlineExceededError';
  }
}

/**
 * @param promise the work.
 * @param ms time it gets.
 * @param what what it is, for the error message.
 * @returns the work's result, or a DeadlineExceededError after `ms`.
 */
export async function withDeadline<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      promise,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new DeadlineExceededError(what, ms)), Math.max(0, ms));
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}
