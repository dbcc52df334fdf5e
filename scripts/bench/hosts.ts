/**
 * `npm run bench:hosts` (as root): JSON executions per second through one and through two service hosts of the
 * multi-host bed (scripts/lib/multiHost.ts): host *servers* runs MongoDB (FerretDB) and Temporal, *api-1* and *api-2*
 * a service process each. The same run sends HOSTS_TOTAL (200) executions at HOSTS_CONCURRENCY (20) in flight, first
 * all to api-1, then alternately to api-1 and api-2. On one machine the hosts share its cores: the figure says what
 * a second replica adds when the first is the bottleneck, not what two machines would do.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { bootstrapOrganization } from '../../commands/bootstrap';
import { connectMongo, disconnectMongo } from '../../lib/mongo';
import { startFakeAnthropic } from '../fakes/anthropic';
import { bedUnavailable, createBed } from '../lib/multiHost';
import { serviceNode } from '../lib/pinnedNode';
import { ApiClient } from './client';
import { executeJson, inLanes } from './scenarios';
import { fmtMs, percentile } from './stats';
import { runBench } from './run';

const say = (line: string): void => void process.stderr.write(`[hosts] ${line}\n`);
const TOTAL = Number(process.env.HOSTS_TOTAL ?? 200);
const CONCURRENCY = Number(process.env.HOSTS_CONCURRENCY ?? 20);
const MESSAGE = '[chunks:200] hi';
const ROOT = path.resolve(__dirname, '..', '..');

/** Starts a TypeScript entrypoint on a host with `node`; resolves once its output matches. */
function startOn(
  prefix: string[],
  node: string,
  script: string,
  args: string[],
  env: NodeJS.ProcessEnv,
  ready: RegExp
) {
  const child = spawn(prefix[0], [...prefix.slice(1), node, '--import', 'tsx', script, ...args], {
    cwd: ROOT,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  const done = new Promise<string>((resolve, reject) => {
    const onData = (d: Buffer): void => {
      out += d.toString();
      if (ready.test(out)) resolve(out);
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.once('exit', (code) => reject(new Error(`${script} exited (${code}):\n${out.slice(-2000)}`)));
  });
  return { child, done };
}

async function main(): Promise<void> {
  const why = bedUnavailable();
  if (why) throw new Error(why);
  const bed = createBed(['servers', 'api-1', 'api-2']);
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'aas-bench-hosts-'));
  const children: ChildProcess[] = [];
  const fake = await startFakeAnthropic(bed.gateway);
  // Interrupted, it still stops its processes and removes the hosts.
  const cleanUp = (): void => {
    for (const c of children) c.kill('SIGKILL');
    bed.destroy();
    process.exit(130);
  };
  process.once('SIGINT', cleanUp);
  process.once('SIGTERM', cleanUp);
  try {
    const servers = startOn(
      bed.prefix('servers'),
      process.execPath,
      'scripts/lib/bedServers.ts',
      [dataDir, bed.hosts.servers.address],
      process.env,
      /"temporal":/
    );
    children.push(servers.child);
    const { mongo, temporal } = JSON.parse(/\{.*"temporal".*\}/.exec(await servers.done)![0]) as {
      mongo: string;
      temporal: string;
    };
    const env = (host: string): NodeJS.ProcessEnv => ({
      ...process.env,
      NODE_ENV: 'development',
      LOG_LEVEL: 'info', // the ready line, `worker started`, is an info line
      HOST: bed.hosts[host].address,
      WAKEUP_HOST: bed.hosts[host].address,
      APP_URL: `http://${bed.hosts[host].address}:3000`,
      MONGODB_URI: `${mongo}/bench`,
      TEMPORAL_ADDRESS: temporal,
      ANTHROPIC_API_KEY: 'bench',
      ANTHROPIC_BASE_URL: fake.url,
      ENCRYPTION_KEY: 'b'.repeat(64),
      WORKSPACES_DIR: path.join(dataDir, host, 'workspaces'),
      MEDIA_DIR: path.join(dataDir, host, 'media'),
    });
    // The service processes on the image's Node, as `npm run dev` runs them (scripts/lib/pinnedNode.ts).
    const node = await serviceNode({ say });
    say(`service processes on Node ${node.version} (${node.path})`);
    const apis = ['api-1', 'api-2'].map((host) =>
      startOn(bed.prefix(host), node.path, 'worker/service.ts', [], env(host), /worker started/)
    );
    children.push(...apis.map((a) => a.child));
    await Promise.all(apis.map((a) => a.done));
    await connectMongo(mongo, { dbName: 'bench' });
    const boot = await bootstrapOrganization({ org: 'Hosts', email: 'hosts@example.com' });
    const clients = ['api-1', 'api-2'].map((h) => new ApiClient(`http://${bed.hosts[h].address}:3000`, boot.apiToken));
    const agent = await clients[0].json<{ id: string }>('POST', '/api/v1/agents', { name: 'H', systemPrompt: 'x' });
    for (const c of clients) await executeJson(c, agent.body.id, 'warm-up', 90_000);
    for (const hosts of [1, 2]) {
      let n = 0;
      const op = (): Promise<number> => executeJson(clients[n++ % hosts], agent.body.id, MESSAGE, 60_000);
      await inLanes(40, CONCURRENCY, op);
      const run = await inLanes(TOTAL, CONCURRENCY, op);
      const done = run.total - run.failures.length;
      say(
        `${hosts} service host(s): ${done} executions at concurrency ${CONCURRENCY}: ` +
          `${((done / run.wallMs) * 1000).toFixed(1)}/s, p50 ${fmtMs(percentile(run.latencies, 50))}, ` +
          `p99 ${fmtMs(percentile(run.latencies, 99))}, ${run.failures.length} failed`
      );
    }
    say(
      `load average ${os
        .loadavg()
        .map((l) => l.toFixed(2))
        .join(' ')}`
    );
    await disconnectMongo();
  } finally {
    for (const c of children) c.kill('SIGTERM');
    await new Promise((r) => setTimeout(r, 3000));
    for (const c of children) c.kill('SIGKILL');
    await fake.close();
    bed.destroy();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

runBench(main, say);
