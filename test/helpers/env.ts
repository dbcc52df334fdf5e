/**
 * Test configuration: the real environment (server addresses from the global setup) with quiet logs.
 */
import { randomBytes } from 'node:crypto';
import os from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { loadConfig, type Config } from '../../lib/config';
import { createLogger, type Logger } from '../../lib/logger';

/**
 * @param overrides environment variables to set on top.
 * @returns a validated Config.
 */
export function testConfig(overrides: Record<string, string> = {}): Readonly<Config> {
  return loadConfig({
    ...process.env,
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
    VALIDATE_RESPONSES: 'true',
    ENCRYPTION_KEY: TEST_ENCRYPTION_KEY,
    WORKSPACES_DIR: path.join(process.env.AAS_TEST_DATA_DIR ?? os.tmpdir(), 'workspaces'),
    // The in-process apps get room on a loaded machine; the request deadline's own test runs the real default
    // (test/scripts/selfHealing.test.ts, test/lib/requestDeadline.test.ts).
    REQUEST_DEADLINE_MS: '60000',
    MEDIA_DIR: path.join(process.env.AAS_TEST_DATA_DIR ?? os.tmpdir(), 'media'),
    ...overrides,
  });
}

/** The key tests encrypt secrets with (so a test can check the database holds no clear text). */
export const TEST_ENCRYPTION_KEY = randomBytes(32).toString('hex');

/** @returns a logger honouring TEST_LOG_LEVEL (silent by default). */
export function testLogger(): Logger {
  return createLogger(
    { logLevel: (process.env.TEST_LOG_LEVEL as Config['logLevel']) ?? 'silent', logPretty: false },
    'test'
  );
}

/**
 * A logger whose entries a test reads back.
 * @param name the logger's name.
 * @param level the lowest level kept.
 * @returns the logger, and its entries (parsed JSON lines) as they are written.
 */
export function capturingLogger(
  name: string,
  level: Config['logLevel']
): { logger: Logger; lines: Array<Record<string, unknown>> } {
  const lines: Array<Record<string, unknown>> = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const line of chunk.toString('utf8').split('\n').filter(Boolean)) lines.push(JSON.parse(line));
      done();
    },
  });
  return { logger: createLogger({ logLevel: level, logPretty: false }, name, sink), lines };
}

/**
 * @param overrides variables to set on top.
 * @returns the environment for a child process started by a test (api, worker, admin CLI): the test file's
 * ENCRYPTION_KEY, so that its processes and its in-process client or worker open each other's Temporal payloads.
 */
export function childTestEnv(overrides: Record<string, string>): NodeJS.ProcessEnv {
  return { ...process.env, LOG_LEVEL: 'info', LOG_PRETTY: 'false', ENCRYPTION_KEY: TEST_ENCRYPTION_KEY, ...overrides };
}
