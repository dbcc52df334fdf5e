/**
 * Bad local state gives one clear ProvisionError line, not a stack trace.
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import mongoose from 'mongoose';
import { loadToolConfig } from '../../lib/config';
import { SEARCH_ATTRIBUTES } from '../../workflows/searchAttributes';
import { startMongoStack } from '../../scripts/servers';
import { ensureMongoServer, ensureTemporalCli, ProvisionError } from '../../scripts/servers/binaries';
import { freePort, lockDataDir, startMongo, startTemporal } from '../../scripts/servers/launch';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'aas-servers-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

describe('server provisioning', () => {
  it('a port already in use is reported with what to do', async () => {
    const blocker = net.createServer();
    const port = await freePort();
    await new Promise<void>((r) => blocker.listen(port, '127.0.0.1', () => r()));
    try {
      const server = await ensureMongoServer(loadToolConfig(), () => undefined);
      await expect(startMongo({ server, dataDir: dir, port })).rejects.toThrow(
        new ProvisionError(
          `port ${port} is already in use, so MongoDB cannot start: stop whatever holds it (an earlier \`npm run dev\`?) or set MONGODB_URI to use that server`
        )
      );
      const bin = await ensureTemporalCli(loadToolConfig(), () => undefined);
      await expect(startTemporal({ bin, dataDir: dir, port, namespace: 'default' })).rejects.toThrow(
        /already in use.*TEMPORAL_ADDRESS/
      );
    } finally {
      blocker.close();
    }
  });

  it('a data directory held by a live process is refused; a stale lock is taken over', async () => {
    const holder = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 30000)']);
    try {
      writeFileSync(path.join(dir, '.lock'), String(holder.pid));
      expect(() => lockDataDir(dir, 'another `npm run dev`')).toThrow(
        new ProvisionError(`${dir} is in use by another \`npm run dev\` (pid ${holder.pid}): stop that process first`)
      );
    } finally {
      holder.kill();
    }
    await new Promise((r) => holder.once('exit', r));
    const release = lockDataDir(dir, 'test'); // the holder died: its lock is stale
    expect(readFileSync(path.join(dir, '.lock'), 'utf8')).toBe(String(process.pid));
    release();
    expect(existsSync(path.join(dir, '.lock'))).toBe(false);
  });

  it('a server that exits during start-up is reported with its log', async () => {
    const fake = path.join(dir, 'fake-mongod');
    writeFileSync(fake, '#!/bin/sh\necho "fatal: cannot open data files" >&2\nexit 3\n', { mode: 0o755 });
    await expect(
      startMongo({ server: { kind: 'mongod', path: fake }, dataDir: dir, port: await freePort() })
    ).rejects.toThrow(/mongod exited during start-up \(code 3\); last log lines:\n {4}fatal: cannot open data files/);
  });

  it('the Temporal dev server keeps its workflows across a restart (SQLite in WAL mode)', async () => {
    const bin = await ensureTemporalCli(loadToolConfig(), () => undefined);
    const start = async (port: number) =>
      startTemporal({ bin, dataDir: path.join(dir, 'temporal'), port, namespace: 'default' });
    let server = await start(await freePort());
    const workflowId = `restart-${Date.now()}`;
    try {
      const connection = await Connection.connect({ address: server.address });
      try {
        const client = new Client({ connection });
        // No worker polls this queue: the workflow stays running, as it would through a restart in real use.
        await client.workflow.start('agentExecution', { taskQueue: 'nobody-polls', workflowId, args: [] });
      } finally {
        await connection.close();
      }
      expect(existsSync(path.join(dir, 'temporal', 'temporal.db-wal'))).toBe(true);
      await server.stop();
      server = await start(await freePort());
      const again = await Connection.connect({ address: server.address });
      try {
        const description = await new Client({ connection: again }).workflow.getHandle(workflowId).describe();
        expect(description.status.name).toBe('RUNNING');
        expect(description.type).toBe('agentExecution');
      } finally {
        await again.close();
      }
    } finally {
      await server.stop();
    }
  }, 120_000);

  it('the embedded database keeps its data across a restart; each index is mirrored once', async () => {
    const server = await ensureMongoServer(loadToolConfig(), () => undefined);
    if (server.kind !== 'ferretdb') return; // a mongod was found or configured: nothing embedded to restart
    const logFile = path.join(dir, 'mongo', 'ferretdb.log');
    const mirrored = (): string[] => readFileSync(logFile, 'utf8').match(/^mirror: created .*$/gm) ?? [];
    const until = async (cond: () => boolean): Promise<void> => {
      const deadline = Date.now() + 15_000;
      while (!cond()) {
        if (Date.now() > deadline) throw new Error(`not mirrored in time:\n${readFileSync(logFile, 'utf8')}`);
        await new Promise((r) => setTimeout(r, 100));
      }
    };
    const withStack = async (fn: (db: mongoose.mongo.Db) => Promise<void>): Promise<void> => {
      const stack = await startMongoStack(server, dir, await freePort());
      const client = await mongoose.mongo.MongoClient.connect(stack.mongo.address);
      try {
        await fn(client.db('restart'));
      } finally {
        await client.close();
        await stack.stop();
      }
    };
    await withStack(async (db) => {
      await db.collection('things').createIndex({ owner: 1, at: -1 });
      await db.collection('things').insertOne({ _id: 'one' as never, owner: 'o', at: 1 });
      // _id, owner, at (and the metadata table's own), in no set order: wait for the one asserted below.
      await until(() => mirrored().some((l) => / on things_[0-9a-f]{8} \(owner\)$/.test(l)));
      // Then until the mirror loop is done with everything there is (two passes add nothing): on a loaded machine the
      // metadata table's and the array mirrors may come a pass later, and the restart must find them made.
      for (let seen = -1; seen !== mirrored().length;) {
        seen = mirrored().length;
        await new Promise((r) => setTimeout(r, 2500)); // two passes of the mirror loop
      }
    });
    const first = mirrored();
    expect(first.filter((l) => / on things_[0-9a-f]{8} \(owner\)$/.test(l))).toHaveLength(1);
    await withStack(async (db) => {
      expect(await db.collection('things').findOne({ owner: 'o' })).toMatchObject({ _id: 'one', at: 1 });
      await new Promise((r) => setTimeout(r, 2500)); // two passes of the mirror loop
    });
    expect(mirrored()).toEqual(first);
  }, 120_000);

  it("the dev server creates the namespace with the project's search attributes, and names a bad flag", async () => {
    const bin = await ensureTemporalCli(loadToolConfig(), () => undefined);
    const server = await startTemporal({ bin, dataDir: dir, port: await freePort(), namespace: 'attributes' });
    try {
      const connection = await Connection.connect({ address: server.address });
      try {
        const listed = await connection.operatorService.listSearchAttributes({ namespace: 'attributes' });
        const keyword = temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD;
        expect(listed.customAttributes).toMatchObject(
          Object.fromEntries(Object.keys(SEARCH_ATTRIBUTES).map((name) => [name, keyword]))
        );
      } finally {
        await connection.close();
      }
    } finally {
      await server.stop();
    }
    const args = ['server', 'start-dev', '--headless', '--port', String(await freePort())];
    const bad = spawnSync(bin, [...args, '--search-attribute', 'Tenant=Nope'], { encoding: 'utf8', timeout: 30_000 });
    expect(bad.status).toBe(1);
    // The CLI logs it through slog, quotes escaped; ours prints the line as it is.
    expect(bad.stderr).toMatch(/invalid search attribute value type \\?"Nope\\?"/);
  }, 120_000);

  it('a configured binary that does not exist is one clear line', async () => {
    const tools = { ...loadToolConfig(), temporalCliPath: path.join(dir, 'missing') };
    await expect(ensureTemporalCli(tools, () => undefined)).rejects.toThrow(
      new ProvisionError(`TEMPORAL_CLI_PATH=${path.join(dir, 'missing')} is not an executable file`)
    );
  });
});
