/**
 * The worker part of a service process (worker/service.ts): the same worker as the worker-only process (createWorker),
 * on a NativeConnection of its own with a client for eager starts, plus the worker-only process's background duties
 * that a deployment without worker-only processes still needs (the webhook outbox sweep, the spend fold's sweep, the health file).
 */
import { reconcileMissionSchedules } from '../commands/missionSkips';
import { startSpendFold } from '../commands/spendFold';
import { startWebhookOutboxSweep } from '../commands/webhooks';
import type { Config } from '../lib/config';
import type { Logger } from '../lib/logger';
import { createTemporal } from '../lib/temporal';
import type { ApiWorker } from '../api/main';
import { runInProcessWorker } from './create';
import { startHealthFile } from './health';
import { installRuntimeLogger } from './main';

let runtimeInstalled = false;

/**
 * @param deps configuration and the process's logger.
 * @returns the running worker and its client for eager starts.
 * @throws when Temporal cannot be reached (the caller retries).
 */
export async function startServiceWorker(deps: { config: Config; logger: Logger }): Promise<ApiWorker> {
  const { config, logger } = deps;
  if (!runtimeInstalled) {
    installRuntimeLogger(logger, config.observability.temporalMetricsPort);
    runtimeInstalled = true;
  }
  const inProcess = await runInProcessWorker({ config, logger });
  const temporal = createTemporal(config);
  const stopSweep = startWebhookOutboxSweep(temporal, logger);
  const stopFold = startSpendFold(logger); // commands/spendFold.ts
  void reconcileMissionSchedules(temporal, logger); // commands/missionSkips.ts
  const stopHealth = config.workerHealthFile
    ? startHealthFile(inProcess.worker, config.workerHealthFile, config.temporalTaskQueue, (err) =>
        logger.warn({ err }, 'cannot write the worker health file')
      )
    : () => undefined;
  return {
    client: inProcess.client,
    running: inProcess.running,
    stop: async () => {
      stopSweep();
      stopHealth();
      await inProcess.stop();
      await stopFold();
      await temporal.connection.close();
    },
  };
}
