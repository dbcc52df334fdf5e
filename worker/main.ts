/**
 * The worker: config → logger → MongoDB → Temporal runtime logger (forwarded into pino) →
 * NativeConnection → Worker.create → run. SIGTERM/SIGINT drain the worker and exit 0, also during start-up.
 */
import type { Worker } from '@temporalio/worker';
import { DefaultLogger, NativeConnection, Runtime, type LogLevel, type LogMetadata } from '@temporalio/worker';
import { reconcileMissionSchedules } from '../commands/missionSkips';
import { startSpendFold } from '../commands/spendFold';
import { startWebhookOutboxSweep } from '../commands/webhooks';
import { createTemporal, temporalConnectFailure, temporalConnectionOptions } from '../lib/temporal';
import { createWorker } from './create';
import { loadConfigOrExit } from '../lib/config';
import { createLogger, type Logger } from '../lib/logger';
import { serveMetrics } from '../lib/metrics';
import { setupTracing, shutdownTracing } from '../lib/tracing';
import { refuseWithoutIndexes } from '../lib/indexes';
import { autoIndexFor, connectMongo, disconnectMongo } from '../lib/mongo';
import { configureCaches } from '../lib/sharedCache';
import { WakeupReceiver } from '../lib/wakeups';
import '../models';
import { startHealthFile } from './health';
import type { StopSignals } from '../lib/signals';

/**
 * Forwards Temporal's runtime and workflow logs into the pino logger, so every process logs one format; with
 * TEMPORAL_METRICS_PORT, the SDK's worker metrics are served in Prometheus format on that loopback port (and appended
 * to the process's /metrics, lib/metrics.ts).
 * @param logger pino logger.
 * @param temporalMetricsPort TEMPORAL_METRICS_PORT.
 */
export function installRuntimeLogger(logger: Logger, temporalMetricsPort?: number): void {
  const levels: Record<LogLevel, 'trace' | 'debug' | 'info' | 'warn' | 'error'> = {
    TRACE: 'trace',
    DEBUG: 'debug',
    INFO: 'info',
    WARN: 'warn',
    ERROR: 'error',
  };
  const temporalLog = logger.child({ component: 'temporal' });
  Runtime.install({
    shutdownSignals: [], // the entrypoint handles SIGTERM/SIGINT itself
    ...(temporalMetricsPort
      ? { telemetryOptions: { metrics: { prometheus: { bindAddress: `127.0.0.1:${temporalMetricsPort}` } } } }
      : {}),
    logger: new DefaultLogger('INFO', (entry) => {
      temporalLog[levels[entry.level]]((entry.meta ?? {}) as LogMetadata, entry.message);
    }),
  });
}

/**
 * Runs the worker until a stop signal has drained it.
 * @param stop the stop signals captured by the entrypoint.
 */
export async function main(stop: StopSignals): Promise<void> {
  const config = loadConfigOrExit();
  const logger = createLogger(config, 'worker');
  if (!config.mongodbUri || !config.temporalAddress) {
    logger.fatal('MONGODB_URI and TEMPORAL_ADDRESS must be set (npm run dev sets them for you)');
    process.exit(1);
  }
  logger.info({ taskQueue: config.temporalTaskQueue, node: process.version }, 'worker starting');
  let worker: Worker | undefined;
  stop.onStop((signal) => {
    logger.info({ signal }, 'worker shutting down');
    worker?.shutdown();
  });

  // Traces (off unless OTEL_TRACES_EXPORTER asks): before the database connection, the worker and its client are
  // built, so their commands and spans join them.
  await setupTracing(config, 'worker');
  const autoIndex = autoIndexFor(config.nodeEnv);
  await connectMongo(config.mongodbUri, {
    timeoutMs: config.dependencyTimeoutMs,
    autoIndex,
    groupCommit: config.groupCommit,
  });
  // Production builds no index at start: without its unique indexes the process refuses to start (lib/indexes.ts).
  if (!autoIndex) await refuseWithoutIndexes(logger);
  installRuntimeLogger(logger, config.observability.temporalMetricsPort);
  if (config.observability.metricsPort !== undefined) {
    const metrics = await serveMetrics(
      config.host,
      config.observability.metricsPort,
      config.observability.temporalMetricsPort
    );
    const address = metrics.address();
    logger.info({ port: typeof address === 'object' && address ? address.port : null }, 'metrics served on /metrics');
  }
  // The worker caches what the api does (lib/sharedCache.ts) only once it receives their invalidations like an api.
  const invalidations = new WakeupReceiver(null, (err) =>
    logger.warn({ err }, 'cannot register for cache invalidations (retried)')
  );
  try {
    await invalidations.start(config.host, config.wakeupHost);
    configureCaches(config.cacheTtlMs);
  } catch (err) {
    logger.warn({ err }, `no cache invalidations on ${config.host}: the worker reads without caches`);
  }
  const connection = await NativeConnection.connect(temporalConnectionOptions(config)).catch((err: unknown) => {
    logger.fatal({ err }, temporalConnectFailure(config, err));
    logger.flush();
    process.exit(1);
  });
  // Events recorded by activities start their webhook deliveries; the sweep starts whatever an outage left behind.
  const temporal = createTemporal(config);
  const stopSweep = startWebhookOutboxSweep(temporal, logger);
  // The ledger's entries that processes which died left out of their rollups (commands/spendFold.ts).
  const stopFold = startSpendFold(logger);
  // Skipped runs no run has recorded yet, and Schedules made before missions had policies (commands/missionSkips.ts).
  void reconcileMissionSchedules(temporal, logger);
  if (!stop.requested) {
    const created = await createWorker({ config, logger }, connection);
    worker = created;
    // run() moves the worker to RUNNING synchronously, so a stop that came during start-up can shut it down now
    // (a created worker holds the connection until it has run and shut down).
    const running = created.run(); // resolves once shutdown() has drained the worker
    const stopHealth = config.workerHealthFile
      ? startHealthFile(created, config.workerHealthFile, config.temporalTaskQueue, (err) =>
          logger.warn({ err }, 'cannot write the worker health file')
        )
      : () => undefined;
    if (stop.requested) created.shutdown();
    else logger.info({ taskQueue: config.temporalTaskQueue, namespace: config.temporalNamespace }, 'worker started');
    await running.finally(stopHealth);
  }
  stopSweep();
  await stopFold();
  await invalidations.stop();
  await temporal.connection.close();
  await connection.close();
  await disconnectMongo();
  await shutdownTracing();
  logger.info('worker stopped');
  logger.flush();
  process.exit(0);
}
