/**
 * Captures SIGTERM/SIGINT from the first line of an entrypoint, before the heavy modules load (loading the
 * Temporal and model SDKs takes seconds), so a stop that arrives during start-up is handled instead of killing the
 * process. Keep this module free of imports.
 */

export interface StopSignals {
  /** Whether a stop was requested. */
  readonly requested: boolean;
  /** Name of the signal that requested it. */
  readonly signal: string | undefined;
  /** Runs `handler` on the first stop (at once if it already happened); later handlers replace earlier ones. */
  onStop(handler: (signal: string) => void): void;
}

/** @returns the captured stop state of this process. */
export function captureStopSignals(): StopSignals {
  let signal: string | undefined;
  let handler: ((signal: string) => void) | undefined;
  const fire = (name: string): void => {
    if (signal) return;
    signal = name;
    handler?.(name);
  };
  process.on('SIGTERM', () => fire('SIGTERM'));
  process.on('SIGINT', () => fire('SIGINT'));
  return {
    get requested() {
      return signal !== undefined;
    },
    get signal() {
      return signal;
    },
    onStop(h) {
      handler = h;
      if (signal) h(signal);
    },
  };
}
