/**
 * api entrypoint. Stop signals are captured before anything heavy loads; see api/main.ts for the rest.
 */
import { captureStopSignals } from '../lib/signals';

const stop = captureStopSignals();
import('./main')
  .then((m) => m.main(stop))
  .catch((err: unknown) => {
    process.stderr.write(`api failed to start: ${(err as Error)?.stack ?? String(err)}\n`);
    process.exit(1);
  });
