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
import { EventTailer } from '../../commands/eventLog';
import { testConfig, testLogger } from './env';
import { closeAfterAll } from './teardown';

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

/** An app's environment overrides, or a function giving them once the file's earlier `beforeAll` hooks ran. */
export type TestEnv = Record<string, string> | (() => Record<string, string>);

/**
 * The app under test for a whole test file, closed after the file's tests (test/helpers/teardown.ts).
 * @param overrides environment overrides for the app's configuration: given as an object, the app is created now;
 * as a function (a fake server's address is known only once an earlier `beforeAll` started it), the app is created
 * by a `beforeAll` hook, and the object returned gets its fields then.
 * @param options `logger`: the app's logger (default: testLogger()).
 * @returns the app.
 */
export function useTestApp(overrides: TestEnv = {}, options: { logger?: Logger } = {}): TestApp {
  if (typeof overrides !== 'function') {
    const t = createTestApp(overrides, options.logger);
    closeAfterAll(() => t.close());
    return t;
  }
  const t = {} as TestApp;
  beforeAll(() => {
    Object.assign(t, createTestApp(overrides(), options.logger));
  });
  closeAfterAll(() => t.close?.());
  return t;
}

/** An app under test listening on a loopback port, and its base URL. */
export interface ServedTestApp {
  t: TestApp;
  base: string;
}

/**
 * An app under test listening on a free loopback port that is also its APP_URL (the address OAuth metadata and MCP
 * resources name); call close() in afterAll.
 * @param overrides more environment overrides for the app's configuration.
 * @param logger the app's logger.
 * @returns the app and its address.
 */
export async function serveTestApp(
  overrides: Record<string, string> = {},
  logger: Logger = testLogger()
): Promise<ServedTestApp> {
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const t = createTestApp({ APP_URL: base, ...overrides }, logger);
  await t.listen(port);
  return { t, base };
}

/**
 * The app under test for a whole test file, listening on a loopback port: created and listening by a `beforeAll`
 * hook, closed after the file's tests (test/helpers/teardown.ts).
 * @param overrides environment overrides for the app's configuration (a function: computed in that hook, after the
 * file's earlier ones).
 * @param options `logger`: the app's logger; `appUrl`: the app's address is also its APP_URL (serveTestApp).
 * @returns the app and its base URL, set by that hook.
 */
export function useServedTestApp(
  overrides: TestEnv = {},
  options: { logger?: Logger; appUrl?: boolean } = {}
): ServedTestApp {
  const served = {} as ServedTestApp;
  beforeAll(async () => {
    const env = typeof overrides === 'function' ? overrides() : overrides;
    if (options.appUrl) Object.assign(served, await serveTestApp(env, options.logger));
    else {
      served.t = createTestApp(env, options.logger);
      served.base = await served.t.listen();
    }
  });
  closeAfterAll(() => served.t?.close());
  return served;
}
