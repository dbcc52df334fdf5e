/**
 * One pino root logger for the api, the worker and the scripts (JSON; pretty in `npm run dev`).
 * Authorization headers, tokens and secrets are redacted wherever they appear in a log object. Inside an activity,
 * every line carries the `reqId` of the request that started its work.
 */
import pino from 'pino';
import type PinoPretty from 'pino-pretty';
import type { Config } from './config';
import { requestLogFields } from './requestContext';

export type Logger = pino.Logger;

/** Paths removed from every log line. */
export const REDACT_PATHS = [
  'req.headers.authorization',
  'req.headers.cookie',
  'headers.authorization',
  'authorization',
  'token',
  'apiToken',
  'serviceToken',
  'secret',
  'signingSecret',
  'password',
  'encryptionKey',
  '*.token',
  '*.apiToken',
  '*.serviceToken',
  '*.secret',
  '*.signingSecret',
  '*.password',
  '*.authorization',
  '*.encryptionKey',
];

/**
 * Creates the root logger.
 * @param config the level and format.
 * @param name the process role (api, worker, dev, admin).
 * @param destination where JSON lines go (default stdout).
 * @returns a pino logger.
 */
export function createLogger(
  config: Pick<Config, 'logLevel' | 'logPretty'>,
  name: string,
  destination?: pino.DestinationStream
): Logger {
  const options: pino.LoggerOptions = {
    name,
    level: config.logLevel,
    redact: { paths: REDACT_PATHS, censor: '[redacted]' },
    timestamp: pino.stdTimeFunctions.isoTime,
    // Inside an activity, every line names the request id of its work (lib/requestContext.ts).
    mixin: requestLogFields,
  };
  if (!config.logPretty) return destination ? pino(options, destination) : pino(options);
  // Pretty printing in the main thread and synchronously (dev only), so the last lines before an exit are kept.
  // Loaded only here: pino-pretty is a development dependency, absent from production installs, where
  // LOG_PRETTY=true falls back to JSON lines (said once) rather than failing to start.
  let pretty: typeof PinoPretty;
  try {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    pretty = require('pino-pretty') as typeof PinoPretty;
  } catch {
    const logger = destination ? pino(options, destination) : pino(options);
    logger.warn('LOG_PRETTY=true needs the development dependency pino-pretty: logging JSON lines');
    return logger;
  }
  return pino(options, pretty({ colorize: true, translateTime: 'HH:MM:ss.l', ignore: 'pid,hostname', sync: true }));
}
