/**
 * One pino root logger for the api, the worker and the scripts (JSON; pretty in `npm run dev`).
 * Authorization headers, tokens and secrets are redacted wherever they appear in a log object.
 */
import pino from 'pino';
import type { Config } from './config';

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
 * @returns a pino logger.
 */
export function createLogger(config: Pick<Config, 'logLevel' | 'logPretty'>, name: string): Logger {
  return pino({
    name,
    level: config.logLevel,
    redact: { paths: REDACT_PATHS, censor: '[redacted]' },
    timestamp: pino.stdTimeFunctions.isoTime,
    ...(config.logPretty
      ? {
          transport: {
            target: 'pino-pretty',
            options: { colorize: true, translateTime: 'HH:MM:ss.l', ignore: 'pid,hostname' },
          },
        }
      : {}),
  });
}
