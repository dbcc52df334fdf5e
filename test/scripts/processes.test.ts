/**
 * The service's own processes, started as an operator would: `npm run dev` end to end (its service process on the
 * image's Node), and graceful shutdown of the api and the worker.
 */
import { mkdtempSync, rmSync, existsSync, readFileSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { freePort } from '../../scripts/servers/launch';
import { chooseNode, pinnedNodeVersion } from '../../scripts/lib/pinnedNode';
import { childTestEnv } from '../helpers/env';
import { useTestDatabase } from '../helpers/mongo';
import { runScript, spawnScript } from '../helpers/processes';

const db = useTestDatabase();

async function get(url: string, agent?: http.Agent): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    http
      .get(url, { agent }, (res) => {
        let body = '';
        res.on('data', (d: Buffer) => (body += d.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      })
      .on('error', reject);
  });
}

describe('graceful shutdown', () => {
  it('api: SIGTERM stops accepting, closes kept-alive connections and exits 0 within 10 s', async () => {
    const port = await freePort();
    const api = spawnScript('api/server.ts', childTestEnv({ MONGODB_URI: db.uri, PORT: String(port) }));
    await api.waitFor(/api listening/);
    const agent = new http.Agent({ keepAlive: true });
    expect((await get(`http://127.0.0.1:${port}/healthz`, agent)).status).toBe(200);
    const started = Date.now();
    api.child.kill('SIGTERM');
    const { code } = await api.exited();
    expect(code).toBe(0);
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(api.output()).toMatch(/api stopped/);
    await expect(get(`http://127.0.0.1:${port}/healthz`)).rejects.toThrow(/ECONNREFUSED/);
    agent.destroy();
  });

  it('worker: SIGTERM drains the worker and exits 0 within 10 s', async () => {
    const worker = spawnScript(
      'worker/index.ts',
      childTestEnv({ MONGODB_URI: db.uri, TEMPORAL_TASK_QUEUE: `shutdown-${Date.now()}` })
    );
    await worker.waitFor(/worker started/, 60_000);
    const started = Date.now();
    worker.child.kill('SIGTERM');
    const { code } = await worker.exited();
    expect(code).toBe(0);
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(worker.output()).toMatch(/worker stopped/);
  });

  it('worker: SIGTERM while it is still starting (bundling workflows) exits 0', async () => {
    const worker = spawnScript(
      'worker/index.ts',
      childTestEnv({ MONGODB_URI: db.uri, TEMPORAL_TASK_QUEUE: `early-${Date.now()}` })
    );
    await worker.waitFor(/worker starting/, 60_000); // connecting and bundling workflows take seconds more
    expect(worker.output()).not.toMatch(/worker started/);
    worker.child.kill('SIGTERM');
    const { code } = await worker.exited();
    expect(code).toBe(0);
  });
});

describe('npm run dev', () => {
  it('starts embedded servers, worker and api; admin reads the address from the data dir; Ctrl-C stops all', async () => {
    const dataDir = mkdtempSync(path.join(os.tmpdir(), 'aas-dev-'));
    const [port, mongo, temporal, ui] = await Promise.all([freePort(), freePort(), freePort(), freePort()]);
    const env = childTestEnv({
      PORT: String(port),
      DATA_DIR: dataDir,
      DEV_MONGO_PORT: String(mongo),
      DEV_TEMPORAL_PORT: String(temporal),
      DEV_TEMPORAL_UI_PORT: String(ui),
    });
    delete env.MONGODB_URI;
    delete env.TEMPORAL_ADDRESS;
    const dev = spawnScript('scripts/dev.ts', env);
    try {
      await dev.waitFor(/Ctrl-C stops everything/, 120_000);
      expect(dev.output()).toContain(`API         http://127.0.0.1:${port}`);
      expect(dev.output()).toContain(`Temporal UI http://127.0.0.1:${ui}`);
      expect(dev.output()).toContain('npm run --silent admin -- bootstrap');
      const ready = await get(`http://127.0.0.1:${port}/readyz`);
      expect(ready.status).toBe(200);
      // The service process runs on the image's Node (scripts/lib/pinnedNode.ts): this node when it is that major,
      // else the pinned version, installed into the cache; the launcher says which.
      const pinned = pinnedNodeVersion()!;
      const node =
        'use' in chooseNode({ version: process.version, execPath: process.execPath }, pinned)
          ? process.version
          : `v${pinned}`;
      expect(node.split('.')[0]).toBe(`v${pinned.split('.')[0]}`);
      expect(JSON.parse((await get(`http://127.0.0.1:${port}/api/version`)).body).node).toBe(node);
      expect(dev.output()).toContain(`[dev] service processes on Node ${node} (`);
      expect((await get(`http://127.0.0.1:${ui}/`)).status).toBe(200);

      const servers = JSON.parse(readFileSync(path.join(dataDir, 'servers.json'), 'utf8'));
      expect(servers.mongodbUri).toBe(`mongodb://127.0.0.1:${mongo}/agent_service`);
      const adminEnv = { ...env };
      const boot = runScript('scripts/admin.ts', ['bootstrap', '--org', 'Dev', '--email', 'dev@example.com'], adminEnv);
      expect(boot.status).toBe(0);
      const { apiToken } = JSON.parse(boot.stdout);
      const profile = await new Promise<number>((resolve, reject) =>
        http
          .get(
            `http://127.0.0.1:${port}/api/v1/profile`,
            { headers: { authorization: `Bearer ${apiToken}` } },
            (res) => {
              res.resume();
              resolve(res.statusCode ?? 0);
            }
          )
          .on('error', reject)
      );
      expect(profile).toBe(200);

      // A second launcher on the same data directory is refused with one clear line.
      const second = runScript('scripts/dev.ts', [], env);
      expect(second.status).toBe(1);
      expect(second.stderr).toMatch(/is in use by another `npm run dev` \(pid \d+\): stop that process first/);
    } finally {
      dev.child.kill('SIGINT');
      const { code } = await dev.exited();
      expect(code).toBe(0);
    }
    expect(existsSync(path.join(dataDir, 'servers.json'))).toBe(false);
    await expect(get(`http://127.0.0.1:${port}/healthz`)).rejects.toThrow(/ECONNREFUSED/);
    rmSync(dataDir, { recursive: true, force: true });
  }, 180_000);
});
