/**
 * The real app over real HTTP (supertest binds app.callback() to an ephemeral port), with the real Temporal client.
 */
import supertest from 'supertest';
import { createApp } from '../../api/app';
import { createTemporal, type TemporalDeps } from '../../lib/temporal';
import type { Config } from '../../lib/config';
import { testConfig, testLogger } from './env';

export interface TestApp {
  request: ReturnType<typeof supertest>;
  config: Readonly<Config>;
  temporal: TemporalDeps;
  shutdown: AbortController;
  close(): Promise<void>;
}

/**
 * @param overrides environment overrides for the app's configuration.
 * @returns the app under test; call close() in afterAll.
 */
export function createTestApp(overrides: Record<string, string> = {}): TestApp {
  const config = testConfig(overrides);
  const temporal = createTemporal(config);
  const shutdown = new AbortController();
  const app = createApp({ config, logger: testLogger(), temporal, shutdown: shutdown.signal });
  return {
    request: supertest(app.callback()),
    config,
    temporal,
    shutdown,
    close: async () => {
      shutdown.abort();
      await temporal.connection.close();
    },
  };
}
