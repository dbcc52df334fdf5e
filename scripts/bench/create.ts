/**
 * `npm run bench:create`: the yardstick's create phase (`POST /api/v1/agents`, its body, 50 connections × CREATE_DUR
 * seconds, through the yardstick's own load generator: `../shared/bench/lib/load.mjs`, autocannon) against one stack
 * started as bench:quick starts it, CREATE_ROUNDS times in a row, each round with its rate, p50 / p99 and the CPU
 * each create cost in every process of the stack (read from /proc, so it holds on a shared machine), and the load
 * average. Tunables: CREATE_ROUNDS (3), CREATE_DUR (10), CREATE_CONNECTIONS (50), CREATE_LOAD (the load generator's
 * path; its folder needs `npm ci`), BENCH_CPU_PROF=<dir> (CPU profiles of the api and the worker, scripts/bench/stack.ts).
 */
import { spawn } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';
import { bootstrapOrganization } from '../../commands/bootstrap';
import { connectMongo, disconnectMongo } from '../../lib/mongo';
import { projectRoot } from '../servers/paths';
import { BENCH_DB, cpuSecondsByProcess, startStack } from './stack';
import { runBench } from './run';

const say = (line: string): void => void process.stderr.write(`[create] ${line}\n`);
const ROUNDS = Number(process.env.CREATE_ROUNDS ?? 3);
const DUR = Number(process.env.CREATE_DUR ?? 10);
const CONNECTIONS = Number(process.env.CREATE_CONNECTIONS ?? 50);
const LOAD = process.env.CREATE_LOAD ?? path.join(projectRoot(), '..', 'shared', 'bench', 'lib', 'load.mjs');
/** The yardstick's body (run-ours.sh AGENT_BODY). */
const BODY = '{"name":"bench-agent","systemPrompt":"You are a benchmark agent.","role":"Assistant"}';

/**
 * Runs the load generator once.
 * @returns its `name: value unit` lines by name.
 */
function load(url: string, token: string, name: string, connections: number, duration: number) {
  return new Promise<Record<string, number>>((resolve, reject) => {
    const child = spawn(
      process.execPath,
      [
        LOAD,
        '--name',
        name,
        '--url',
        url,
        '--method',
        'POST',
        '--body',
        BODY,
        '--connections',
        String(connections),
      ].concat(['--duration', String(duration)]),
      { env: { ...process.env, BENCH_BEARER: token }, stdio: ['ignore', 'pipe', 'inherit'] }
    );
    let out = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString('utf8')));
    child.on('error', reject);
    child.on('exit', (code) => {
      if (code !== 0) return reject(new Error(`load generator exited with ${code}: ${out}`));
      const figures: Record<string, number> = {};
      for (const m of out.matchAll(/^(\S+): (\S+)/gm)) figures[m[1].replace(`${name}_`, '')] = Number(m[2]);
      resolve(figures);
    });
  });
}

async function main(): Promise<void> {
  const stack = await startStack(say);
  const gcLog = process.env.CREATE_GC_LOG; // with NODE_OPTIONS=--trace-gc: the api's GC lines, into this file
  if (gcLog) {
    const { createWriteStream } = await import('node:fs');
    const out = createWriteStream(gcLog);
    stack.api.child.stdout?.on('data', (c: Buffer) => out.write(c));
  }
  for (const signal of ['SIGINT', 'SIGTERM'] as const)
    process.once(signal, () => void stack.stop().finally(() => process.exit(130)));
  try {
    await connectMongo(stack.mongoUri, { dbName: BENCH_DB });
    const boot = await bootstrapOrganization({ org: 'Create', email: 'create@example.com' });
    const url = `${stack.apiUrl}/api/v1/agents`;
    await load(url, boot.apiToken, 'warm', 10, 3);
    for (let round = 1; round <= ROUNDS; round++) {
      const loadBefore = os.loadavg()[0].toFixed(2);
      const before = cpuSecondsByProcess(stack, 'bench');
      const f = await load(url, boot.apiToken, 'create', CONNECTIONS, DUR);
      const after = cpuSecondsByProcess(stack, 'bench');
      const rows: string[] = [];
      let total = 0;
      for (const [name, seconds] of Object.entries(after).sort()) {
        if (name === 'bench') continue; // the client is the load generator, a child process not counted here
        const ms = ((seconds - (before[name] ?? 0)) * 1000) / f.ok;
        total += ms;
        rows.push(`${name} ${ms.toFixed(2)}`);
      }
      say(
        `round ${round}: ${f.rps.toFixed(0)} creates/s, p50 ${f.p50} ms, p99 ${f.p99} ms, ${f.errors} errors; CPU ms ` +
          `per create: ${rows.join(', ')}; stack ${total.toFixed(2)}; load average ${loadBefore} before`
      );
    }
    await disconnectMongo();
  } finally {
    await stack.stop();
  }
}

runBench(main, say);
