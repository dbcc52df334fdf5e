/**
 * The api process: config → logger → MongoDB → Temporal client (lazy) → createApp → listen.
 * SIGTERM/SIGINT: stop accepting, end SSE streams, let in-flight requests finish, close connections, exit 0
 * (forced after 10 s).
 */
import http from 'node:http';
import { loadConfigOrExit } from '../lib/config';
import { EventTailer } from '../lib/eventLog';
import { startExpirySweeps } from '../lib/expiry';
import { createLogger } from '../lib/logger';
import { connectMongo, disconnectMongo } from '../lib/mongo';
import { createTemporal } from '../lib/temporal';
import { setupTracing, shutdownTracing } from '../lib/tracing';
import '../models';
import type { StopSignals } from '../lib/signals';
import { createApp } from './app';

const SHUTDOWN_GRACE_MS = 10_000;

/**
 * Runs the api until a stop signal; then shuts down gracefully.
 * @param stop the stop signals captured by the entrypoint.
 */
export async function main(stop: StopSignals): Promise<void> {
  const config = loadConfigOrExit();
  const logger = createLogger(config, 'api');
  // Until the server listens, a stop signal simply ends the process.
  stop.onStop(() => process.exit(0));
  if (!config.mongodbUri) {
    logger.fatal('MONGODB_URI is not set (npm run dev sets it for you; npm start needs it)');
    process.exit(1);
  }
  try {
    await connectMongo(config.mongodbUri, { timeoutMs: config.dependencyTimeoutMs });
  } catch (err) {
    logger.fatal({ err }, `cannot reach MongoDB: ${(err as Error).message}`);
    process.exit(1);
  }
  // Where the database has no TTL indexes (the embedded one), this process deletes what expired (lib/expiry.ts).
  const stopSweeps = startExpirySweeps((err) => logger.warn({ err }, 'sweeping expired records failed'));
  // Traces (off unless OTEL_TRACES_EXPORTER asks): before the Temporal client is built, so it joins them.
  await setupTracing(config, 'api');
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
  logger.info({ url: `http://${config.host}:${port}` }, 'api listening');

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
    await closed;
    clearTimeout(force);
    await Promise.allSettled([disconnectMongo(), temporal.connection.close(), shutdownTracing()]);
    logger.info('api stopped');
    logger.flush();
    process.exit(0);
  };
  stop.onStop((signal) => void shutdownGracefully(signal));
}
