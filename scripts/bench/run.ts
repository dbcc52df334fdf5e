/**
 * How every bench script ends: its main's exit code (0 when it returns none), or 1 after printing the failure. The
 * exit is explicit: a request abandoned by a failure may still hold a socket or a timer.
 * @param main the script's work.
 * @param say its progress printer.
 */
export function runBench(main: () => Promise<number | void>, say: (line: string) => void): void {
  main().then(
    (code) => process.exit(code ?? 0),
    (err: unknown) => {
      say(err instanceof Error ? (err.stack ?? err.message) : String(err));
      process.exit(1);
    }
  );
}
