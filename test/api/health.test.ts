import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import supertest from 'supertest';
import { createApp } from '../../api/app';
import { loadToolConfig } from '../../lib/config';
import { connectMongo, disconnectMongo } from '../../lib/mongo';
import { createTemporal } from '../../lib/temporal';
import { EventTailer } from '../../commands/eventLog';
import { ensureMongoServer } from '../../scripts/servers/binaries';
import { startMongoStack, type MongoStack } from '../../scripts/servers';
import { freePort } from '../../scripts/servers/launch';
import { testConfig, testLogger } from '../helpers/env';
import { uniqueDbName } from '../helpers/mongo';

const unavailable = { code: 'service_unavailable', message: 'Service temporarily unavailable. Please retry.' };

describe('GET /healthz and /readyz', () => {
  // This file runs its own MongoDB-compatible server so that it can stop it.
  let stack: MongoStack;
  let dataDir: string;
  beforeAll(async () => {
    dataDir = mkdtempSync(path.join(os.tmpdir(), 'aas-health-'));
    const server = await ensureMongoServer(loadToolConfig(), () => undefined);
    stack = await startMongoStack(server, dataDir, await freePort());
    await connectMongo(stack.mongo.address, { dbName: uniqueDbName() });
  });
  afterAll(async () => {
    await disconnectMongo().catch(() => undefined);
    await stack?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('healthz and readyz answer 200 on the real servers; readyz 503 once MongoDB stops', async () => {
    const config = testConfig();
    const temporal = createTemporal(config);
    const app = createApp({
      config,
      logger: testLogger(),
      temporal,
      events: new EventTailer(),
      shutdown: new AbortController().signal,
    });
    const request = supertest(app.callback());
    try {
      expect((await request.get('/healthz')).body).toEqual({ status: 'ok' });
      const ready = await request.get('/readyz');
      expect(ready.status).toBe(200);
      expect(ready.body).toEqual({ status: 'ready', checks: { mongo: 'ok', temporal: 'ok' } });

      await stack.mongo.stop();
      const down = await request.get('/readyz');
      expect(down.status).toBe(503);
      expect(down.body).toEqual({ error: unavailable, checks: { mongo: 'unavailable', temporal: 'ok' } });
      expect(down.headers['x-request-id']).toBeTruthy();
      expect((await request.get('/healthz')).status).toBe(200);
    } finally {
      await temporal.connection.close();
    }
  });

  it('readyz 503 when Temporal is unreachable', async () => {
    const config = testConfig({ TEMPORAL_ADDRESS: `127.0.0.1:${await freePort()}` });
    const temporal = createTemporal(config);
    const app = createApp({
      config,
      logger: testLogger(),
      temporal,
      events: new EventTailer(),
      shutdown: new AbortController().signal,
    });
    const res = await supertest(app.callback()).get('/readyz');
    expect(res.status).toBe(503);
    expect(res.body.error).toEqual(unavailable);
    expect(res.body.checks.temporal).toBe('unavailable');
    await temporal.connection.close().catch(() => undefined);
  });
});
