/**
 * `npm run dev`: the whole service on one machine. Starts the embedded servers that the configuration does not
 * name (MongoDB on 127.0.0.1:27017, FerretDB over an embedded PostgreSQL on a free port, and the Temporal dev server
 * on 127.0.0.1:7233 with its Web UI on :8233, data in .data/; DEV_*_PORT change the ports), then the service process
 * (HTTP and workflows, worker/service.ts) and WORKER_PROCESSES worker-only processes (pretty logs), run as JavaScript
 * transpiled into dist/ at start (scripts/lib/devBuild.ts) on the image's Node (scripts/lib/pinnedNode.ts), all under the supervisor (scripts/lib/supervisor.ts: a
 * part that dies is restarted with backoff on the same port and data), prints the addresses and the admin command,
 * and stops everything on Ctrl-C.
 * The servers' addresses are written to .data/servers.json for the admin CLI.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { childEnv, loadConfigOrExit, loadToolConfig } from '../lib/config';
import { lockDataDir, ProvisionError, serverUnits, type ServerUnits } from './servers';
import { projectRoot } from './servers/paths';
import { bundleWorkflowsTo } from './lib/workflowBundle';
import { buildConsole } from './lib/consoleBuild';
import { transpileForDev } from './lib/devBuild';
import { serviceNodeArgs } from './lib/serviceHeap';
import { serviceNode } from './lib/pinnedNode';
import { spawnUnit, supervise, workerNames, type Started } from './lib/supervisor';

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
      const res = await fetch(url, { signal: AbortSignal.timeout(3000) });
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
  const cleanup = (): void => {
    rmSync(serversFile, { force: true });
    releaseLock();
  };

  let interrupted = false;
  const onSignal = (): void => {
    interrupted = true;
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);

  // The service processes run on the pinned Node (the image's; scripts/lib/pinnedNode.ts), found or installed while
  // the servers are provisioned.
  const node = serviceNode({ say });
  let servers: ServerUnits;
  try {
    servers = await serverUnits({
      tools,
      dataDir: config.dataDir,
      namespace: config.temporalNamespace,
      mongoPort: config.mongodbUri ? undefined : config.devPorts.mongo,
      temporalPort: config.temporalAddress ? undefined : config.devPorts.temporal,
      temporalUiPort: config.temporalAddress ? undefined : config.devPorts.temporalUi,
      say,
    });
  } catch (err) {
    cleanup();
    throw err;
  }
  if (interrupted) {
    cleanup();
    process.exit(0);
  }

  const mongodbUri = config.mongodbUri ?? `${servers.mongo!.address}/agent_service`;
  const temporalAddress = config.temporalAddress ?? servers.temporal!.address;
  const uiUrl = servers.temporal ? `http://127.0.0.1:${config.devPorts.temporalUi}` : undefined;
  say('bundling the workflow code for the worker');
  const bundle = await bundleWorkflowsTo(path.join(config.dataDir, 'workflow-bundle.js'));
  const env = childEnv({
    MONGODB_URI: mongodbUri,
    TEMPORAL_ADDRESS: temporalAddress,
    WORKFLOW_BUNDLE: bundle,
    LOG_PRETTY: 'true',
    ...(config.encryptionKey ? {} : { ENCRYPTION_KEY: devEncryptionKey(config.dataDir) }),
  });
  // The service processes run plain node on the sources transpiled into dist/ (only what changed since the last
  // start; no type checking, as with tsx): a TypeScript loader in each would hold about 45 MiB more
  // (docs/benchmarks.md "Memory of the service process"). One node process per child, so stop signals reach our
  // handlers directly.
  const built = transpileForDev(projectRoot());
  if (built.written > 0) say(`transpiled ${built.written} of ${built.total} sources into ${built.outDir}`);
  // The console (served at /): built only when its sources or the API contract changed since its last build.
  try {
    await buildConsole({ say });
  } catch (err) {
    say(`the console did not build (the API still starts; / says so): ${err instanceof Error ? err.message : err}`);
  }
  const { path: nodePath, version: nodeVersion } = await node;
  say(`service processes on Node ${nodeVersion} (${nodePath})`);
  const service = (entry: string): (() => Promise<Started>) =>
    spawnUnit({
      command: nodePath,
      args: [...serviceNodeArgs(env), path.join(built.outDir, entry)],
      env,
      graceMs: 10_000,
    });
  const serverNames = servers.units.map((u) => u.name);
  const sup = supervise(
    [
      ...servers.units,
      // The service process serves HTTP and runs workflows (eager starts); worker-only processes add capacity.
      { name: 'service', start: service('worker/service.js'), after: serverNames },
      ...workerNames(config.workerProcesses).map((name) => ({
        name,
        start: service('worker/index.js'),
        after: serverNames,
      })),
    ],
    config.restart,
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
  if (interrupted) shutdown();

  try {
    await sup.started;
  } catch (err) {
    await sup.done;
    cleanup();
    throw err;
  }
  writeFileSync(
    serversFile,
    JSON.stringify(
      { pid: process.pid, mongodbUri, postgresUrl: servers.postgres?.address, temporalAddress, temporalUiUrl: uiUrl },
      null,
      2
    )
  );

  const apiUrl = `http://${config.host}:${config.port}`;
  if (await waitReady(`${apiUrl}/readyz`, 60_000)) {
    say('');
    say(`API         ${apiUrl}   (ready: ${apiUrl}/readyz)`);
    say(`Console     ${apiUrl}/   (sign in with a td_ token)`);
    if (uiUrl) say(`Temporal UI ${uiUrl}`);
    say(`MongoDB     ${mongodbUri}`);
    if (servers.postgres) say(`PostgreSQL  ${servers.postgres.address}   (FerretDB's storage)`);
    say(`Get tokens: npm run --silent admin -- bootstrap --org "My org" --email me@example.com`);
    say('Ctrl-C stops everything; a part that crashes is restarted.');
    say('');
  }
  const code = await sup.done;
  cleanup();
  process.exit(code);
}

main().catch((err: unknown) => {
  say(err instanceof ProvisionError ? err.message : ((err as Error)?.stack ?? String(err)));
  process.exit(1);
});
