/**
 * The V8 heap settings of a service process (the service process and the worker-only ones), given by every launcher
 * that spawns them (`npm run dev`, `npm start`, the benchmarks) and by the compose file's commands [docs/decisions.md
 * "The service process's own CPU and memory" and "The service process's young generation on Node 24"].
 *
 * - The old generation: V8 lets it grow to a multiple of what survived the last full collection before it collects
 *   again, and that multiple depends on the heap limit: 4 when the limit is 2 GiB or more (V8's default on a machine
 *   with 16 GiB or more), about 1.6 at 1 GiB. A service process keeps about 80 MiB alive; under load its heap grew
 *   to 270 MiB and more of mostly garbage, the largest part of its resident size (docs/benchmarks.md "The service
 *   process's own CPU and memory"). 1 GiB keeps the multiple small and leaves the process twelve times what it keeps
 *   alive.
 * - The young generation: Node 24's V8 lets each of its two semi-spaces grow to 64 MiB where Node 20's stopped at 16,
 *   and a busy service process uses all of it: about 100 MiB more resident on Node 24 for the same work. 16 MiB is
 *   Node 20's own default (the flag changes nothing there), so both Nodes run the young generation the service was
 *   measured with (docs/benchmarks.md "The service process's CPU per execution, again, and its young generation").
 *
 * NODE_OPTIONS with its own `--max-old-space-size` or `--max-semi-space-size` wins for that setting.
 */

/** The old-space limit of a service process, in MiB. */
export const SERVICE_OLD_SPACE_MIB = 1024;
/** The largest size of each of the young generation's two semi-spaces, in MiB (Node 20's default). */
export const SERVICE_SEMI_SPACE_MIB = 16;

/**
 * @param env the environment the process will get (its NODE_OPTIONS).
 * @returns the node arguments to put before the entry script.
 */
export function serviceNodeArgs(env: NodeJS.ProcessEnv = process.env): string[] {
  const options = env.NODE_OPTIONS ?? '';
  return [
    ...(/--max[-_]old[-_]space[-_]size/.test(options) ? [] : [`--max-old-space-size=${SERVICE_OLD_SPACE_MIB}`]),
    ...(/--max[-_]semi[-_]space[-_]size/.test(options) ? [] : [`--max-semi-space-size=${SERVICE_SEMI_SPACE_MIB}`]),
  ];
}
