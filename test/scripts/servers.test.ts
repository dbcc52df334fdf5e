/**
 * Bad local state gives one clear ProvisionError line, not a stack trace.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { loadToolConfig } from '../../lib/config';
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

  it('a configured binary that does not exist is one clear line', async () => {
    const tools = { ...loadToolConfig(), temporalCliPath: path.join(dir, 'missing') };
    await expect(ensureTemporalCli(tools, () => undefined)).rejects.toThrow(
      new ProvisionError(`TEMPORAL_CLI_PATH=${path.join(dir, 'missing')} is not an executable file`)
    );
  });
});
