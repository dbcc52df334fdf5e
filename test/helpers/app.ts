/**
 * The real app over real HTTP (supertest binds app.callback() to an ephemeral port), with the real Temporal client.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import supertest from 'supertest';
import { freePort } from '../../scripts/servers/launch';
import { createApp } from '../../api/app';
import type { EventDispatcher } from '../../commands/serviceEvents';
import { webhookDispatcher } from '../../commands/webhooks';
import { createTemporal, type TemporalDeps } from '../../lib/temporal';
import type { Config } from '../../lib/config';
import type { Logger } from '../../lib/logger';
import { EventTailer } from '../../lib/eventLog';
import { testConfig, testLogger } from './env';

export interface TestApp {
  request: ReturnType<typeof supertest>;
  /** The Koa application (its routers, for the contract's drift test). */
  app: ReturnType<typeof createApp>;
  config: Readonly<Config>;
  temporal: TemporalDeps;
  /** The app's dispatcher of service events: a test recording events itself passes the app (`recordEvent(input, t)`). */
  dispatchEvent: EventDispatcher;
  shutdown: AbortController;
  /** Listens on a loopback port (default: a free one; for streaming tests) and returns the base URL. */
  listen(port?: number): Promise<string>;
  close(): Promise<void>;
}

/**
 * @param overrides environment overrides for the app's configuration.
 * @param logger the app's logger (default: testLogger(), silent unless TEST_LOG_LEVEL is set).
 * @returns the app under test; call close() in afterAll.
 */
export function createTestApp(overrides: Record<string, string> = {}, logger: Logger = testLogger()): TestApp {
  const config = testConfig(overrides);
  const temporal = createTemporal(config);
  const shutdown = new AbortController();
  const events = new EventTailer(config.eventPollMs);
  // Wake-ups as in the api process (registered in the test file's database once it is connected).
  const listening = events.listen(config.host, config.wakeupHost);
  listening.catch(() => undefined); // awaited by listen() and close(), which report a failure
  const dispatchEvent = webhookDispatcher(temporal, logger);
  const app = createApp({ config, logger, temporal, events, shutdown: shutdown.signal, dispatchEvent });
  let server: http.Server | undefined;
  return {
    request: supertest(app.callback()),
    app,
    listen: async (port = 0) => {
      await listening;
      server ??= http.createServer(app.callback());
      if (!server.listening) await new Promise<void>((r) => server!.listen(port, '127.0.0.1', () => r()));
      return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    },
    config,
    temporal,
    dispatchEvent,
    shutdown,
    close: async () => {
      shutdown.abort();
      await events.stop();
      if (server?.listening) {
        server.closeAllConnections();
        await new Promise((r) => server!.close(r));
      }
      await temporal.connection.close();
    },
  };
}

/**
 * The app under test for a whole test file: created now, closed after the file's tests.
 * @param overrides environment overrides for the app's configuration.
 * @returns the app.
 */
export function useTestApp(overrides: Record<string, string> = {}): TestApp {
  const t = createTestApp(overrides);
  afterAll(async () => t.close());
  return t;
}

/**
 * An app under test listening on a free loopback port that is also its APP_URL (the address OAuth metadata and MCP
 * resources name); call close() in afterAll.
 * @param overrides more environment overrides for the app's configuration.
 * @returns the app and its address.
 */
export async function serveTestApp(overrides: Record<string, string> = {}): Promise<{ t: TestApp; base: string }> {
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const t = createTestApp({ APP_URL: base, ...overrides });
  await t.listen(port);
  return { t, base };
}
