/**
 * The api process: config → logger → MongoDB → Temporal client (lazy) → createApp → listen.
 * SIGTERM/SIGINT: stop accepting, end SSE streams, let in-flight requests finish, close connections, exit 0
 * (forced after 10 s).
 *
 * A service process (worker/service.ts, docs/architecture.md §1) passes {@link ApiOptions.worker}: once listening, the
 * process also runs a Temporal worker on its own NativeConnection (connected in the background, retried while Temporal
 * is away), and starts executions eagerly through a client on that connection. api/ itself never imports worker/.
 */
import type { Client } from '@temporalio/client';
import http from 'node:http';
import { loadConfigOrExit } from '../lib/config';
import { EventTailer } from '../commands/eventLog';
import { startExpirySweeps } from '../commands/expirySweeps';
import { createLogger, type Logger } from '../lib/logger';
import type { Config } from '../lib/config';
import { refuseWithoutIndexes } from '../lib/indexes';
import { autoIndexFor, connectMongo, disconnectMongo } from '../lib/mongo';
import { createTemporal } from '../lib/temporal';
import { setupTracing, shutdownTracing } from '../lib/tracing';
import '../models';
import type { StopSignals } from '../lib/signals';
import { createApp } from './app';

const SHUTDOWN_GRACE_MS = 10_000;
/** Waits between two attempts to start the in-process worker (Temporal away at start-up). */
const WORKER_RETRY_MS = [500, 1000, 2000, 5000];

/** A worker running inside this process (worker/create.ts `runInProcessWorker`). */
export interface ApiWorker {
  /** A client on the worker's connection: executions started through it start eagerly. */
  client: Client;
  /** Resolves when the worker has stopped (by {@link stop}, or because it failed). */
  running: Promise<void>;
  stop(): Promise<void>;
}

export interface ApiOptions {
  /** Starts the process's worker (a service process); absent, the process serves HTTP only. */
  worker?: (deps: { config: Config; logger: Logger }) => Promise<ApiWorker>;
}

/**
 * Runs the api until a stop signal; then shuts down gracefully.
 * @param stop the stop signals captured by the entrypoint.
 */
export async function main(stop: StopSignals, options: ApiOptions = {}): Promise<void> {
  const config = loadConfigOrExit();
  const logger = createLogger(config, options.worker ? 'service' : 'api');
  // Until the server listens, a stop signal simply ends the process.
  stop.onStop(() => process.exit(0));
  if (!config.mongodbUri) {
    logger.fatal('MONGODB_URI is not set (npm run dev sets it for you; npm start needs it)');
    process.exit(1);
  }
  // Traces (off unless OTEL_TRACES_EXPORTER asks): before the database connection and the Temporal client are built,
  // so their commands and spans join them.
  await setupTracing(config, 'api');
  const autoIndex = autoIndexFor(config.nodeEnv);
  try {
    await connectMongo(config.mongodbUri, {
      timeoutMs: config.dependencyTimeoutMs,
      autoIndex,
      groupCommit: config.groupCommit,
    });
  } catch (err) {
    logger.fatal({ err }, `cannot reach MongoDB: ${(err as Error).message}`);
    process.exit(1);
  }
  // Production builds no index at start: without its unique indexes the process refuses to start (lib/indexes.ts).
  if (!autoIndex) await refuseWithoutIndexes(logger);
  // Where the database has no TTL indexes (the embedded one), this process deletes what expired (lib/expiry.ts).
  const stopSweeps = startExpirySweeps((err) => logger.warn({ err }, 'sweeping expired records failed'));
  const temporal = createTemporal(config);
  const shutdown = new AbortController();
  const events = new EventTailer(config.eventPollMs, (err) => logger.warn({ err }, 'event tailer read failed'));
  shutdown.signal.addEventListener('abort', () => void events.stop());
  try {
    await events.listen(config.host, config.wakeupHost);
  } catch (err) {
    logger.fatal({ err }, `cannot receive stream wake-ups on ${config.host}: ${(err as Error).message}`);
    process.exit(1);
  }
  const app = createApp({ config, logger, temporal, events, shutdown: shutdown.signal });
  const server = http.createServer(app.callback());
  server.keepAliveTimeout = 65_000;

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(config.port, config.host, resolve);
  }).catch((err: NodeJS.ErrnoException) => {
    logger.fatal(
      err.code === 'EADDRINUSE'
        ? `port ${config.port} on ${config.host} is already in use: stop the other process or set PORT`
        : `cannot listen: ${err.message}`
    );
    process.exit(1);
  });
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : config.port;
  logger.info({ url: `http://${config.host}:${port}`, node: process.version }, 'api listening');

  // The process's worker, once Temporal answers; until then executions start for any worker (no eager start).
  let worker: ApiWorker | undefined;
  const startWorker = options.worker;
  const workerStarted = startWorker
    ? (async () => {
        for (let attempt = 0; !shutdown.signal.aborted; attempt++) {
          try {
            const started = await startWorker({ config, logger });
            if (shutdown.signal.aborted) {
              await started.stop();
              return;
            }
            worker = started;
            temporal.eager = started.client;
            logger.info({ taskQueue: config.temporalTaskQueue }, 'worker started (executions start eagerly here)');
            started.running.then(
              () => undefined,
              (err: unknown) => {
                // A worker that failed is not restarted in place: the supervisor restarts the whole process.
                logger.fatal({ err }, 'the in-process worker failed');
                logger.flush();
                process.exit(1);
              }
            );
            return;
          } catch (err) {
            const wait = WORKER_RETRY_MS[Math.min(attempt, WORKER_RETRY_MS.length - 1)];
            if (attempt === 0) logger.warn({ err }, `cannot start the worker yet (retried every ${wait} ms or so)`);
            await new Promise((r) => setTimeout(r, wait));
          }
        }
      })()
    : Promise.resolve();

  const shutdownGracefully = async (signal: string): Promise<void> => {
    logger.info({ signal }, 'api shutting down');
    const force = setTimeout(() => {
      logger.warn('shutdown grace period over: closing remaining connections');
      server.closeAllConnections();
    }, SHUTDOWN_GRACE_MS - 1000);
    force.unref();
    shutdown.abort();
    stopSweeps();
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    server.closeIdleConnections();
    // The worker drains (its replies finish or are handed over) while the last requests finish.
    temporal.eager = undefined;
    const drained = workerStarted.then(() => worker?.stop());
    await closed;
    await drained.catch((err: unknown) => logger.warn({ err }, 'worker shutdown failed'));
    clearTimeout(force);
    await Promise.allSettled([disconnectMongo(), temporal.connection.close(), shutdownTracing()]);
    logger.info('api stopped');
    logger.flush();
    process.exit(0);
  };
  stop.onStop((signal) => void shutdownGracefully(signal));
}
