/**
 * worker entrypoint: config → logger → MongoDB → Temporal runtime logger (forwarded into pino) →
 * NativeConnection → Worker.create → run. SIGTERM/SIGINT drain the worker and exit 0, also during start-up.
 */
import { DefaultLogger, NativeConnection, Runtime, Worker, type LogLevel, type LogMetadata } from '@temporalio/worker';
import { createActivities } from '../activities';
import { loadConfigOrExit } from '../lib/config';
import { createLogger, type Logger } from '../lib/logger';
import { connectMongo, disconnectMongo } from '../lib/mongo';
import '../models';

/**
 * Forwards Temporal's runtime and workflow logs into the pino logger, so every process logs one format.
 * @param logger pino logger.
 */
export function installRuntimeLogger(logger: Logger): void {
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
    logger: new DefaultLogger('INFO', (entry) => {
      temporalLog[levels[entry.level]]((entry.meta ?? {}) as LogMetadata, entry.message);
    }),
  });
}

async function main(): Promise<void> {
  const config = loadConfigOrExit();
  const logger = createLogger(config, 'worker');
  if (!config.mongodbUri || !config.temporalAddress) {
    logger.fatal('MONGODB_URI and TEMPORAL_ADDRESS must be set (npm run dev sets them for you)');
    process.exit(1);
  }
  // Signals are ours from the first moment: a stop that arrives while the worker is still starting (bundling
  // workflows takes seconds) ends the process cleanly instead of killing it mid-start.
  let worker: Worker | undefined;
  let stopRequested = false;
  const stop = (signal: string): void => {
    if (stopRequested) return;
    stopRequested = true;
    logger.info({ signal }, 'worker shutting down');
    if (worker) worker.shutdown();
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));

  await connectMongo(config.mongodbUri);
  installRuntimeLogger(logger);
  const connection = await NativeConnection.connect({ address: config.temporalAddress });
  if (!stopRequested) {
    worker = await Worker.create({
      connection,
      namespace: config.temporalNamespace,
      taskQueue: config.temporalTaskQueue,
      workflowsPath: require.resolve('../workflows'),
      activities: createActivities({ logger }),
    });
    logger.info({ taskQueue: config.temporalTaskQueue, namespace: config.temporalNamespace }, 'worker started');
    if (stopRequested) worker.shutdown();
    await worker.run(); // resolves once shutdown() has drained the worker
  }
  await connection.close();
  await disconnectMongo();
  logger.info('worker stopped');
  logger.flush();
  process.exit(0);
}

if (require.main === module) {
  main().catch((err: unknown) => {
    process.stderr.write(`worker failed: ${(err as Error)?.stack ?? String(err)}\n`);
    process.exit(1);
  });
}
