/**
 * `npm run bench:engine`: how long Temporal alone takes, on this machine, from starting a workflow to the first
 * line of its activity, which is the least time to first token any execution can have (our model call runs in
 * that activity). The workflow is the bare shape of an execution (scripts/bench/engine/workflows.ts: one regular
 * activity, one local activity, no work), the server is the dev server with the flags the project runs it with
 * (scripts/servers: WAL pragmas, eager activity dispatch), the worker is the SDK's defaults. Each line: concurrency,
 * the rate (runs per second per client, or as fast as possible), workflows/s, start → activity p50/p99 and start →
 * result p50/p99. ENGINE_SECONDS (10) per line.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { NativeConnection, Worker } from '@temporalio/worker';
import { loadToolConfig } from '../../lib/config';
import { freePort, provisionServers } from '../servers';
import * as activities from './engine/activities';
import { percentile } from './stats';
import { runBench } from './run';

const say = (line: string): void => void process.stderr.write(`[engine] ${line}\n`);
const SECONDS = Number(process.env.ENGINE_SECONDS ?? 10);
const TASK_QUEUE = 'bench-engine';
/** Concurrency and runs per second per client (0: as fast as possible); 10 × 2/s is the yardstick's stream rate. */
const LINES: Array<[number, number]> = [
  [1, 0],
  [10, 2],
  [10, 0],
];

async function measure(client: Client, concurrency: number, perClient: number): Promise<string> {
  const toActivity: number[] = [];
  const whole: number[] = [];
  const gapMs = perClient > 0 ? 1000 / perClient : 0;
  const end = Date.now() + SECONDS * 1000;
  await Promise.all(
    Array.from({ length: concurrency }, async (_, k) => {
      for (let i = 0; Date.now() < end; i++) {
        const id = `run-${concurrency}-${perClient}-${k}-${i}-${Date.now()}`;
        const t = performance.now();
        await client.workflow.execute('bareExecution', { taskQueue: TASK_QUEUE, workflowId: id, args: [id] });
        const took = performance.now() - t;
        whole.push(took);
        toActivity.push(activities.beganAt.get(id)! - t);
        activities.beganAt.delete(id);
        if (gapMs > took) await new Promise((r) => setTimeout(r, gapMs - took));
      }
    })
  );
  const ms = (list: number[], p: number): string => percentile(list, p).toFixed(0);
  return (
    `concurrency ${concurrency}, ${perClient > 0 ? `${perClient}/s per client` : 'as fast as possible'}: ` +
    `${(whole.length / SECONDS).toFixed(1)} workflows/s; start → activity p50 ${ms(toActivity, 50)} ms, ` +
    `p99 ${ms(toActivity, 99)} ms; start → result p50 ${ms(whole, 50)} ms, p99 ${ms(whole, 99)} ms`
  );
}

async function main(): Promise<void> {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'aas-engine-'));
  const servers = await provisionServers({
    tools: loadToolConfig(),
    dataDir,
    namespace: 'default',
    temporalPort: await freePort(),
    say,
  });
  try {
    const address = servers.temporal!.address;
    const worker = await Worker.create({
      connection: await NativeConnection.connect({ address }),
      taskQueue: TASK_QUEUE,
      workflowsPath: require.resolve('./engine/workflows'),
      activities,
    });
    const running = worker.run();
    const connection = await Connection.connect({ address });
    const client = new Client({ connection });
    await client.workflow.execute('bareExecution', { taskQueue: TASK_QUEUE, workflowId: 'warm-up', args: ['warm-up'] });
    for (const [concurrency, perClient] of LINES) say(await measure(client, concurrency, perClient));
    worker.shutdown();
    await running;
    await connection.close();
  } finally {
    await servers.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

runBench(main, say);
