/**
 * `npm run bench`: a benchmark of agent execution, not a test. Starts the whole system on 127.0.0.1 with a fake
 * Anthropic API that answers instantly (scripts/bench/stack.ts), measures time to first delta, cancellation
 * latency, throughput and memory (scripts/bench/scenarios.ts), then per-operation latency with 1,000 and with
 * 50,000 documents stored (scripts/bench/scale.ts), prints a summary and writes docs/benchmarks.md.
 * Everything it started is stopped, and its data directory removed, also on failure, Ctrl-C or the time limit;
 * any failure exits 1 and leaves docs/benchmarks.md untouched.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import * as prettier from 'prettier';
import { bootstrapOrganization } from '../../commands/bootstrap';
import { connectMongo, disconnectMongo } from '../../lib/mongo';
import { Execution, StreamEvent } from '../../models';
import { ProvisionError } from '../servers';
import { projectRoot } from '../servers/paths';
import { ApiClient } from './client';
import { renderMarkdown, renderSummary, type BenchResults } from './report';
import { limiterPhase } from './limiter';
import { scalePhase } from './scale';
import { cancellation, executeJson, platformTtfd, providerTtfd, throughput } from './scenarios';
import { memoryOf } from '../lib/proc';
import { BENCH_DB, startStack, type Stack } from './stack';
import { runBench } from './run';

/** Limit for everything after provisioning (a first run may build the server binaries, which is not counted). */
const RUN_LIMIT_MS = 420_000;
/** The first execution also waits for the worker to bundle its workflows and poll. */
const FIRST_EXECUTION_TIMEOUT_MS = 90_000;

const WARMUP_RUNS = 5;
const TTFD_RUNS = 40;
const TTFD_MESSAGE = '[chunks:20] ttfd';
const CANCEL_RUNS = 10;
const CANCEL_MESSAGE = '[chunks:200][slow:50] cancel me';
const THROUGHPUT_TOTAL = 200;
const THROUGHPUT_CONCURRENCY = 20;
const THROUGHPUT_MESSAGE = 'hi';

const say = (line: string): void => void process.stderr.write(`[bench] ${line}\n`);

/** docs/benchmarks.md keeps what follows this line when `npm run bench` rewrites the file. */
const KEEP_MARKER = '<!-- kept by npm run bench: sections written from other runs -->';

/**
 * Creates the organization in the database the api uses, then the agent over HTTP.
 * @param stack the running system.
 * @returns an api client and the agent id.
 */
async function setUp(
  stack: Stack
): Promise<{ client: ApiClient; agentId: string; org: { organizationId: string; userId: string } }> {
  const boot = await bootstrapOrganization({ org: 'Bench', email: 'bench@example.com' });
  const apiToken = boot.apiToken;
  const org = { organizationId: boot.organizationId, userId: boot.userId };
  const client = new ApiClient(stack.apiUrl, apiToken);
  const res = await client.json<{ id?: string }>('POST', '/api/v1/agents', {
    name: 'Bench agent',
    systemPrompt: 'You answer briefly.',
  });
  if (res.status !== 200 || !res.body.id) throw new Error(`creating the agent answered ${res.status}`);
  return { client, agentId: res.body.id, org };
}

/**
 * Counts what the run left in the database: with FerretDB, query times depend on collection sizes.
 * @param stack the running system.
 * @returns the server kind and the sizes of the two collections that grow with every execution.
 */
async function databaseSize(stack: Stack): Promise<BenchResults['database']> {
  const [executions, streamEvents] = await Promise.all([
    Execution.estimatedDocumentCount(),
    StreamEvent.estimatedDocumentCount(),
  ]);
  return { server: stack.mongoKind, executions, streamEvents };
}

async function measure(stack: Stack): Promise<BenchResults> {
  const started = performance.now();
  // One connection for the whole run (setting up organizations, counting, filling the scale phase's collection):
  // commands are never queued while disconnected (lib/mongo.ts), so the bench does not connect and disconnect.
  await connectMongo(stack.mongoUri, { dbName: BENCH_DB });
  const { client, agentId, org } = await setUp(stack);
  try {
    say(`warm-up: ${WARMUP_RUNS} JSON executions (the first waits for the worker)`);
    await executeJson(client, agentId, 'warm-up', FIRST_EXECUTION_TIMEOUT_MS);
    for (let i = 1; i < WARMUP_RUNS; i++) await executeJson(client, agentId, 'warm-up');

    say(`time to first delta: ${TTFD_RUNS} streamed executions, then ${TTFD_RUNS} requests straight to the fake`);
    const platform = await platformTtfd(client, agentId, TTFD_RUNS, TTFD_MESSAGE);
    const provider = await providerTtfd(stack.fake.url, TTFD_RUNS, TTFD_MESSAGE);

    say(`cancellation: ${CANCEL_RUNS} streamed executions`);
    const cancelSamples = await cancellation(client, agentId, CANCEL_RUNS, CANCEL_MESSAGE);

    say(`throughput: ${THROUGHPUT_TOTAL} JSON executions, ${THROUGHPUT_CONCURRENCY} in flight`);
    const tp = await throughput(client, agentId, THROUGHPUT_TOTAL, THROUGHPUT_CONCURRENCY, THROUGHPUT_MESSAGE);
    const memory = { api: memoryOf(stack.api.child.pid), worker: memoryOf(stack.worker.child.pid) };
    const database = await databaseSize(stack);

    const scale = await scalePhase(client, org, agentId, say);
    say('rate limiter: database round trips per counted request');
    const limiter = await limiterPhase();

    for (const f of tp.failures) say(`failed execution #${f.index}: ${f.reason}`);
    for (const svc of [stack.api, stack.worker]) {
      if (svc.warnings > 0)
        say(`${svc.name} logged ${svc.warnings} warning/error lines; last:\n  ${svc.lastLines().join('\n  ')}`);
    }
    return {
      date: new Date(),
      ttfd: { runs: TTFD_RUNS, message: TTFD_MESSAGE, platform, provider },
      cancel: { runs: CANCEL_RUNS, message: CANCEL_MESSAGE, samples: cancelSamples },
      throughput: { ...tp, message: THROUGHPUT_MESSAGE },
      memory,
      database,
      scale,
      limiter,
      elapsedS: (performance.now() - started) / 1000,
    };
  } finally {
    client.close();
    await disconnectMongo();
  }
}

function timeLimit(ms: number): { promise: Promise<never>; clear(): void } {
  let timer: NodeJS.Timeout | undefined;
  const promise = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`the benchmark did not finish within ${ms / 1000} s`)), ms);
  });
  return { promise, clear: () => clearTimeout(timer) };
}

async function main(): Promise<number> {
  let stack: Stack | undefined;
  let starting: Promise<Stack> | undefined;
  let interrupted: (err: Error) => void = () => undefined;
  const onSignal = (signal: NodeJS.Signals): void => interrupted(new Error(`interrupted by ${signal}`));
  const stopSignal = new Promise<never>((_, reject) => (interrupted = reject));
  stopSignal.catch(() => undefined);
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  try {
    starting = startStack(say);
    stack = await Promise.race([starting, stopSignal]);
    const limit = timeLimit(RUN_LIMIT_MS);
    let results: BenchResults;
    try {
      // Whichever comes first: the results, a crashed api or worker, the time limit, or Ctrl-C.
      results = await Promise.race([measure(stack), stack.crashed, limit.promise, stopSignal]);
    } finally {
      limit.clear();
    }
    process.stdout.write(`\n${renderSummary(results)}\n\n`);
    if (results.throughput.failures.length > 0) {
      say(`${results.throughput.failures.length} executions failed: docs/benchmarks.md is not updated`);
      return 1;
    }
    const doc = path.join(projectRoot(), 'docs', 'benchmarks.md');
    // Formatted with the project's prettier settings, so `npm run lint` (prettier --check) accepts the file as written.
    const options = await prettier.resolveConfig(doc);
    // Everything from the KEEP_MARKER line on (the yardstick comparison with the peer, round-trip accounting) is
    // written by hand from other runs and kept as it is.
    const previous = existsSync(doc) ? readFileSync(doc, 'utf8') : '';
    const kept = previous.includes(KEEP_MARKER) ? previous.slice(previous.indexOf(KEEP_MARKER)) : '';
    const markdown = `${renderMarkdown(results)}\n${kept}`;
    writeFileSync(doc, await prettier.format(markdown, { ...options, filepath: doc }));
    say(`wrote ${path.relative(projectRoot(), doc)}`);
    return 0;
  } catch (err) {
    say(err instanceof ProvisionError ? err.message : err instanceof Error ? (err.stack ?? err.message) : String(err));
    return 1;
  } finally {
    say('stopping');
    // Ctrl-C during start-up: let the start finish (or fail, which cleans up by itself), then stop it.
    stack ??= await starting?.catch(() => undefined);
    await stack?.stop();
  }
}

runBench(main, say);
