/**
 * Service process entrypoint (docs/architecture.md §1; docs/decisions.md "Process roles"): serves HTTP (api/main.ts) and
 * runs workflows and activities (worker/inProcess.ts) on one NativeConnection, starting executions eagerly so that
 * their first workflow task runs here at once. `npm run dev` and `npm start` run this; worker/index.ts is the
 * worker-only role (scale-out). Stop signals are captured before anything heavy loads.
 */
import { captureStopSignals } from '../lib/signals';

const stop = captureStopSignals();
Promise.all([import('../api/main'), import('./inProcess')])
  .then(([api, worker]) => api.main(stop, { worker: worker.startServiceWorker }))
  .catch((err: unknown) => {
    process.stderr.write(`service failed to start: ${(err as Error)?.stack ?? String(err)}\n`);
    process.exit(1);
  });
