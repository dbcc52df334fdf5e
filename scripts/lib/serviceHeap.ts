/**
 * The V8 heap limit of a service process (the service process and the worker-only ones), given by every launcher
 * that spawns them (`npm run dev`, `npm start`, the benchmarks) [docs/decisions.md "The service process's heap
 * limit"]. V8 lets the old generation grow to a multiple of what survived the last full collection before it
 * collects again, and that multiple depends on the heap limit: 4 when the limit is 2 GiB or more (V8's default on a
 * machine with 16 GiB or more), about 1.6 at 1 GiB. A service process keeps about 80 MiB alive; under load its heap
 * grew to 270 MiB and more of mostly garbage, the largest part of its resident size (docs/benchmarks.md "The service
 * process's own CPU and memory"). 1 GiB keeps the multiple small and leaves the process twelve times what it keeps
 * alive. NODE_OPTIONS with its own `--max-old-space-size` wins.
 */

/** The old-space limit of a service process, in MiB. */
export const SERVICE_OLD_SPACE_MIB = 1024;

/**
 * @param env the environment the process will get (its NODE_OPTIONS).
 * @returns the node arguments to put before the entry script.
 */
export function serviceNodeArgs(env: NodeJS.ProcessEnv = process.env): string[] {
  return /--max[-_]old[-_]space[-_]size/.test(env.NODE_OPTIONS ?? '')
    ? []
    : [`--max-old-space-size=${SERVICE_OLD_SPACE_MIB}`];
}
