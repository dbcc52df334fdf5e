/**
 * Jest global setup: provisions real servers once per run (the same code as `npm run dev`) on free ports with a
 * temporary data directory, unless MONGODB_URI / TEMPORAL_ADDRESS name servers already. Test workers inherit the
 * addresses through the environment; each test file then uses its own database.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadConfig, loadToolConfig } from '../lib/config';
import { ensureChromium } from '../scripts/browser';
import { bundleWorkflowsTo } from '../scripts/lib/workflowBundle';
import { freePort, provisionServers, ProvisionError } from '../scripts/servers';
import type { TestServers } from './helpers/servers';

/**
 * Runs `npm run build:console`'s script (a child process: the build loads the server's route declarations, which
 * this process does not need).
 * @param say progress printer.
 * @returns undefined when the console is built, else why not.
 */
function buildConsoleInChild(say: (line: string) => void): Promise<string | undefined> {
  return new Promise((resolve) => {
    const root = path.resolve(__dirname, '..');
    const child = spawn(process.execPath, ['--import', 'tsx', path.join(root, 'scripts', 'buildConsole.ts')], {
      cwd: root,
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let err = '';
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    child.on('error', (e) => resolve(`the console build did not start: ${e.message}`));
    child.on('exit', (code) => {
      const lines = err.trim();
      if (code === 0) {
        if (lines.includes('built the console')) say(lines.split('\n').pop()!);
        resolve(undefined);
      } else resolve(`the console build failed (${code}): ${lines.split('\n').slice(-20).join('\n')}`);
    });
  });
}

export default async function globalSetup(): Promise<void> {
  const started = Date.now();
  const config = loadConfig();
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'aas-test-'));
  const say = (line: string): void => void process.stderr.write(`[test servers] ${line}\n`);
  // The browser for the reference page's test is found (or installed) while the servers start.
  const chromium = ensureChromium(loadToolConfig(), say);
  // The console's browser tests need its build: made (only when its sources or the contract changed) meanwhile.
  const consoleBuilt = buildConsoleInChild(say);
  try {
    const servers = await provisionServers({
      tools: loadToolConfig(),
      dataDir,
      namespace: config.temporalNamespace,
      mongoPort: config.mongodbUri ? undefined : await freePort(),
      temporalPort: config.temporalAddress ? undefined : await freePort(),
      say,
    });
    process.env.MONGODB_URI = config.mongodbUri ?? servers.mongo!.address;
    process.env.TEMPORAL_ADDRESS = config.temporalAddress ?? servers.temporal!.address;
    process.env.AAS_TEST_DATA_DIR = dataDir;
    // Index-usage tests read PostgreSQL's statistics under FerretDB (absent with mongod or MONGODB_URI).
    if (servers.postgres) process.env.AAS_TEST_POSTGRES_URL = servers.postgres.address;
    // Which MongoDB the tests talk to: tests of the embedded FerretDB run on it and are skipped elsewhere.
    process.env.AAS_TEST_MONGO_KIND = config.mongodbUri ? 'external' : servers.postgres ? 'ferretdb' : 'mongod';
    // Bundle the workflows once for every in-process test worker.
    process.env.AAS_WORKFLOW_BUNDLE = await bundleWorkflowsTo(path.join(dataDir, 'workflow-bundle.js'));
    const consoleError = await consoleBuilt;
    if (consoleError) process.env.AAS_TEST_CONSOLE_MISSING = consoleError;
    const browser = await chromium;
    if ('path' in browser) process.env.AAS_TEST_CHROMIUM = browser.path;
    else process.env.AAS_TEST_CHROMIUM_MISSING = browser.missing;
    (globalThis as { __AAS_TEST_SERVERS__?: TestServers }).__AAS_TEST_SERVERS__ = { stop: servers.stop, dataDir };
    say(
      `MongoDB ${process.env.MONGODB_URI}, Temporal ${process.env.TEMPORAL_ADDRESS} (ready in ${Date.now() - started} ms)`
    );
  } catch (err) {
    if (err instanceof ProvisionError) {
      say(err.message);
      throw new Error(`test servers could not start: ${err.message}`);
    }
    throw err;
  }
}
