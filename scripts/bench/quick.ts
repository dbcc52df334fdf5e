/**
 * `npm run bench:quick`: one figure for A/B comparisons of the execution path: JSON executions per second at a
 * given concurrency and the CPU each costs in every process of the stack (api, worker, Temporal, FerretDB,
 * PostgreSQL, and this process: the client and the fake model). CPU per execution is read from /proc for the
 * stack's own processes, so it holds even when other work shares the machine, unlike the rate.
 * QUICK_TOTAL (300), QUICK_CONCURRENCY (20), QUICK_MESSAGE ('[chunks:200] hi': a 200-delta reply); BENCH_CPU_PROF=<dir>
 * for CPU profiles of the api and the worker (scripts/bench/stack.ts).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { bootstrapOrganization } from '../../commands/bootstrap';
import { connectMongo, disconnectMongo } from '../../lib/mongo';
import { ApiClient } from './client';
import { executeJson, throughput } from './scenarios';
import { BENCH_DB, startStack } from './stack';

const say = (line: string): void => void process.stderr.write(`[quick] ${line}\n`);
const TOTAL = Number(process.env.QUICK_TOTAL ?? 300);
const CONCURRENCY = Number(process.env.QUICK_CONCURRENCY ?? 20);
const MESSAGE = process.env.QUICK_MESSAGE ?? '[chunks:200] hi';

interface Proc {
  pid: number;
  ppid: number;
  name: string;
  ticks: number;
}

/** Every process of this machine with its parent and its user + system CPU ticks. */
function processes(): Proc[] {
  const out: Proc[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const close = stat.lastIndexOf(')');
      const fields = stat.slice(close + 2).split(' ');
      const cmd = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0');
      out.push({
        pid: Number(entry),
        ppid: Number(fields[1]),
        name: role(cmd),
        ticks: Number(fields[11]) + Number(fields[12]),
      });
    } catch {
      // gone meanwhile
    }
  }
  return out;
}

function role(cmd: string[]): string {
  const line = cmd.join(' ');
  if (line.includes('api/server.ts')) return 'api';
  if (line.includes('worker/index.ts')) return 'worker';
  if (/temporal/.test(cmd[0] ?? '')) return 'temporal';
  if (/ferretdb/i.test(cmd[0] ?? '')) return 'ferretdb';
  if (/postgres/.test(line)) return 'postgres';
  return 'other';
}

/** CPU ticks of this process's descendants by role, and of this process itself as `bench`. */
function cpuByRole(): Map<string, number> {
  const all = processes();
  const mine = new Set([process.pid]);
  for (let grew = true; grew;) {
    grew = false;
    for (const p of all)
      if (!mine.has(p.pid) && mine.has(p.ppid)) {
        mine.add(p.pid);
        grew = true;
      }
  }
  const by = new Map<string, number>();
  for (const p of all) {
    if (!mine.has(p.pid)) continue;
    const name = p.pid === process.pid ? 'bench' : p.name;
    by.set(name, (by.get(name) ?? 0) + p.ticks);
  }
  return by;
}

async function main(): Promise<void> {
  const stack = await startStack(say);
  // Interrupted, it still stops the servers it started.
  for (const signal of ['SIGINT', 'SIGTERM'] as const)
    process.once(signal, () => void stack.stop().finally(() => process.exit(130)));
  try {
    await connectMongo(stack.mongoUri, { dbName: BENCH_DB });
    const boot = await bootstrapOrganization({ org: 'Quick', email: 'quick@example.com' });
    const client = new ApiClient(stack.apiUrl, boot.apiToken);
    const agent = await client.json<{ id: string }>('POST', '/api/v1/agents', { name: 'Q', systemPrompt: 'x' });
    await executeJson(client, agent.body.id, 'warm-up', 90_000);
    await throughput(client, agent.body.id, 40, CONCURRENCY, MESSAGE);
    const before = cpuByRole();
    const tp = await throughput(client, agent.body.id, TOTAL, CONCURRENCY, MESSAGE);
    const after = cpuByRole();
    const hz = 100;
    const done = tp.total - tp.failures.length;
    say(
      `${done} executions at concurrency ${CONCURRENCY}: ${((done / tp.wallMs) * 1000).toFixed(1)} exec/s, ${tp.failures.length} failed`
    );
    const sorted = [...tp.latencies].sort((a, b) => a - b);
    say(
      `latency p50 ${sorted[Math.floor(sorted.length / 2)]?.toFixed(0)} ms, p99 ${sorted[Math.ceil(sorted.length * 0.99) - 1]?.toFixed(0)} ms`
    );
    let total = 0;
    const rows: string[] = [];
    for (const [name, ticks] of [...after].sort()) {
      const ms = (((ticks - (before.get(name) ?? 0)) / hz) * 1000) / done;
      total += ms;
      rows.push(`${name} ${ms.toFixed(1)}`);
    }
    say(`CPU ms per execution: ${rows.join(', ')}; total ${total.toFixed(1)}`);
    const load = readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
    say(`load average ${load}`);
    await disconnectMongo();
  } finally {
    await stack.stop();
  }
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    say(err instanceof Error ? (err.stack ?? err.message) : String(err));
    process.exit(1);
  }
);
