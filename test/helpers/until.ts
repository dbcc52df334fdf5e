/**
 * Reads until a value satisfies a check, or fails with the last value read.
 * @param read reads the value.
 * @param ok whether it is the awaited one.
 * @param timeoutMs how long to keep reading.
 * @param intervalMs pause between reads.
 * @param what what is awaited, for the failure's message.
 * @returns the first value that satisfied the check.
 */
export async function until<T>(
  read: () => Promise<T>,
  ok: (v: T) => boolean,
  timeoutMs = 60_000,
  intervalMs = 100,
  what = 'a value'
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await read();
    if (ok(v)) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; last value ${JSON.stringify(v)}`);
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}
