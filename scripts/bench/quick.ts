/**
 * `npm run bench:quick`: one figure for A/B comparisons of the execution path: JSON executions per second at a
 * given concurrency and the CPU each costs in every process of the stack (api, worker, Temporal, FerretDB,
 * PostgreSQL, and this process: the client and the fake model). CPU per execution is read from /proc for the
 * stack's own processes, so it holds even when other work shares the machine, unlike the rate.
 * QUICK_TOTAL (300), QUICK_CONCURRENCY (20), QUICK_MESSAGE ('[chunks:200] hi': a 200-delta reply), QUICK_SCENARIO
 * (`create`: agents created instead of executions, the yardstick's create phase); BENCH_CPU_PROF=<dir>
 * for CPU profiles of the api and the worker (scripts/bench/stack.ts), with `window.json` there: the measured run's
 * start and end on the profiles' clock (the monotonic clock in µs, as a `.cpuprofile`'s sample times), so that a
 * profile can be read for that window alone. Ends with the api's and the worker's resident memory (VmRSS, and its
 * peak).
 */
import { writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { bootstrapOrganization } from '../../commands/bootstrap';
import { connectMongo, disconnectMongo } from '../../lib/mongo';
import { memoryOf } from '../lib/proc';
import { ApiClient } from './client';
import { createAgentOnce, executeJson, inLanes, throughput } from './scenarios';
import { BENCH_DB, cpuSecondsByProcess, startStack, type Stack } from './stack';
import { fmtMs, percentile } from './stats';
import { runBench } from './run';

const say = (line: string): void => void process.stderr.write(`[quick] ${line}\n`);
const TOTAL = Number(process.env.QUICK_TOTAL ?? 300);
const CONCURRENCY = Number(process.env.QUICK_CONCURRENCY ?? 20);
const MESSAGE = process.env.QUICK_MESSAGE ?? '[chunks:200] hi';
/** QUICK_SCENARIO=create: agents created (`POST /api/v1/agents`, as the yardstick's create phase) instead. */
const CREATE = process.env.QUICK_SCENARIO === 'create';

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
    const run = (total: number): ReturnType<typeof throughput> =>
      CREATE
        ? inLanes(total, CONCURRENCY, () => createAgentOnce(client))
        : throughput(client, agent.body.id, total, CONCURRENCY, MESSAGE);
    await run(40);
    const monotonicUs = (): number => Number(process.hrtime.bigint() / 1000n);
    const before = cpuSecondsByProcess(stack, 'bench');
    const fromUs = monotonicUs();
    const tp = await run(TOTAL);
    const toUs = monotonicUs();
    const after = cpuSecondsByProcess(stack, 'bench');
    const profDir = process.env.BENCH_CPU_PROF;
    if (profDir) writeFileSync(path.join(profDir, 'window.json'), JSON.stringify({ fromUs, toUs }));
    const done = tp.total - tp.failures.length;
    const what = CREATE ? 'agents created' : 'executions';
    say(
      `${done} ${what} at concurrency ${CONCURRENCY}: ${((done / tp.wallMs) * 1000).toFixed(1)}/s, ${tp.failures.length} failed`
    );
    say(`latency p50 ${fmtMs(percentile(tp.latencies, 50))}, p99 ${fmtMs(percentile(tp.latencies, 99))}`);
    let total = 0;
    const rows: string[] = [];
    for (const [name, seconds] of Object.entries(after).sort()) {
      const ms = ((seconds - (before[name] ?? 0)) * 1000) / done;
      total += ms;
      rows.push(`${name} ${ms.toFixed(1)}`);
    }
    say(`CPU ms per ${CREATE ? 'agent created' : 'execution'}: ${rows.join(', ')}; total ${total.toFixed(1)}`);
    const load = os
      .loadavg()
      .map((l) => l.toFixed(2))
      .join(' ');
    const mib = (pid: number | undefined): string => {
      const { rssKib, peakKib } = memoryOf(pid);
      return `${((rssKib ?? 0) / 1024).toFixed(0)} MiB (peak ${((peakKib ?? 0) / 1024).toFixed(0)})`;
    };
    say(`resident: api ${mib(stack.api.child.pid)}, worker ${mib(stack.worker.child.pid)}`);
    if (!CREATE) say(`eager starts (whole run, warm-up included): ${await eagerStarts(stack)}`);
    say(`load average ${load}`);
    await disconnectMongo();
  } finally {
    await stack.stop();
  }
}

/**
 * @param stack the run's stack.
 * @returns how many of the service process's executions started eagerly (the rest ran in any process).
 */
async function eagerStarts(stack: Stack): Promise<string> {
  const res = await fetch(`${stack.apiUrl}/metrics`, { headers: { authorization: `Bearer ${stack.metricsToken}` } });
  const text = await res.text();
  const sum = (name: string): number =>
    text
      .split('\n')
      .filter((l) => l.startsWith(name))
      .reduce((n, l) => n + Number(l.split(' ').at(-1)), 0);
  return `${sum('aas_executions_started_eagerly_total')} of ${sum('aas_executions_started_total')}`;
}

runBench(main, say);
