/**
 * `npm run dev`: the whole service on one machine. Starts the embedded servers that the configuration does not
 * name (MongoDB on 127.0.0.1:27017, FerretDB over an embedded PostgreSQL on a free port, and the Temporal dev server
 * on 127.0.0.1:7233 with its Web UI on :8233, data in .data/; DEV_*_PORT change the ports), then the worker and the api (pretty logs), prints the addresses and the admin command, and stops
 * everything on Ctrl-C. The servers' addresses are written to .data/servers.json for the admin CLI.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { childEnv, loadConfigOrExit, loadToolConfig } from '../lib/config';
import { lockDataDir, provisionServers, ProvisionError, type Provisioned } from './servers';
import { projectRoot } from './servers/paths';
import { supervise } from './lib/supervisor';

const say = (line: string): void => void process.stderr.write(`[dev] ${line}\n`);

/** A development encryption key kept in .data/ so secrets stay readable across restarts. */
function devEncryptionKey(dataDir: string): string {
  const file = path.join(dataDir, 'dev-encryption-key');
  if (!existsSync(file)) writeFileSync(file, randomBytes(32).toString('hex'), { mode: 0o600 });
  return readFileSync(file, 'utf8').trim();
}

async function waitReady(url: string, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    try {
      const res = await fetch(url);
      if (res.ok) return true;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  return false;
}

async function main(): Promise<void> {
  const config = loadConfigOrExit();
  const tools = loadToolConfig();
  mkdirSync(config.dataDir, { recursive: true });
  const releaseLock = lockDataDir(config.dataDir, 'another `npm run dev`');
  const serversFile = path.join(config.dataDir, 'servers.json');
  let servers: Provisioned | undefined;
  const cleanup = async (): Promise<void> => {
    await servers?.stop();
    rmSync(serversFile, { force: true });
    releaseLock();
  };

  let interrupted = false;
  const onSignal = (): void => {
    interrupted = true;
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);

  try {
    servers = await provisionServers({
      tools,
      dataDir: config.dataDir,
      namespace: config.temporalNamespace,
      mongoPort: config.mongodbUri ? undefined : config.devPorts.mongo,
      temporalPort: config.temporalAddress ? undefined : config.devPorts.temporal,
      temporalUiPort: config.temporalAddress ? undefined : config.devPorts.temporalUi,
      say,
    });
  } catch (err) {
    await cleanup();
    throw err;
  }
  if (interrupted) {
    await cleanup();
    process.exit(0);
  }

  const mongodbUri = config.mongodbUri ?? `${servers.mongo!.address}/agent_service`;
  const temporalAddress = config.temporalAddress ?? servers.temporal!.address;
  const uiUrl = servers.temporal ? `http://127.0.0.1:${config.devPorts.temporalUi}` : undefined;
  writeFileSync(
    serversFile,
    JSON.stringify(
      { pid: process.pid, mongodbUri, postgresUrl: servers.postgres?.address, temporalAddress, temporalUiUrl: uiUrl },
      null,
      2
    )
  );

  const env = childEnv({
    MONGODB_URI: mongodbUri,
    TEMPORAL_ADDRESS: temporalAddress,
    LOG_PRETTY: 'true',
    ...(config.encryptionKey ? {} : { ENCRYPTION_KEY: devEncryptionKey(config.dataDir) }),
  });
  // `node --import tsx` runs the TypeScript sources in one process per child, so stop signals reach our handlers
  // directly (the tsx CLI adds a relaying parent process).
  const root = projectRoot();
  const sup = supervise(
    [
      { name: 'worker', command: process.execPath, args: ['--import', 'tsx', path.join(root, 'worker/index.ts')], env },
      { name: 'api', command: process.execPath, args: ['--import', 'tsx', path.join(root, 'api/server.ts')], env },
    ],
    10_000,
    say
  );
  process.removeListener('SIGINT', onSignal);
  process.removeListener('SIGTERM', onSignal);
  const shutdown = (): void => {
    say('stopping…');
    sup.stop();
  };
  process.on('SIGINT', shutdown);
  process.on('SIGTERM', shutdown);

  const apiUrl = `http://${config.host}:${config.port}`;
  if (await waitReady(`${apiUrl}/readyz`, 60_000)) {
    say('');
    say(`API         ${apiUrl}   (ready: ${apiUrl}/readyz)`);
    if (uiUrl) say(`Temporal UI ${uiUrl}`);
    say(`MongoDB     ${mongodbUri}`);
    if (servers.postgres) say(`PostgreSQL  ${servers.postgres.address}   (FerretDB's storage)`);
    say(`Get tokens: npm run --silent admin -- bootstrap --org "My org" --email me@example.com`);
    say('Ctrl-C stops everything.');
    say('');
  }
  const code = await sup.done;
  await cleanup();
  process.exit(code);
}

main().catch((err: unknown) => {
  say(err instanceof ProvisionError ? err.message : ((err as Error)?.stack ?? String(err)));
  process.exit(1);
});
