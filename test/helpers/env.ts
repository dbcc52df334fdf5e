/**
 * Test configuration: the real environment (server addresses from the global setup) with quiet logs.
 */
import { randomBytes } from 'node:crypto';
import os from 'node:os';
import path from 'node:path';
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

/** @returns the environment for a child process started by a test (api, worker, admin CLI). */
export function childTestEnv(overrides: Record<string, string>): NodeJS.ProcessEnv {
  return { ...process.env, LOG_LEVEL: 'info', LOG_PRETTY: 'false', ...overrides };
}
