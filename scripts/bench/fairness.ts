/**
 * `npm run bench:fairness` (issue 39 point 3): does one organization's burst starve another? On the stack of
 * `npm run bench` (scripts/bench/stack.ts: real servers, the fake model), organization B sends a JSON execution every
 * FAIR_B_EVERY_MS (200) ms, FAIR_B_COUNT (30) times, first on an idle service, then while organization A floods it
 * with FAIR_A_TOTAL (200) executions sent at once. An A request answered 503 is sent again after its `Retry-After`
 * (nothing of A's is lost: it waits in line or is told when to come back). B's executions are streamed: its time to
 * `meta` (admitted) is reported beside its whole latency. Reports B's latency p50 / p90 in both
 * phases and their ratio (the bar: p50 flooded ≤ 1.5 × idle), and A's completions, 503s and failures.
 * FAIR_MESSAGE ('[chunks:10][slow:100] hi': a reply of about a second that waits on the model, as a real one does,
 * rather than on the CPU: with replies that keep the CPU busy, 20 at once slow every execution down whoever admitted
 * them, and the figure would measure the machine, not the sharing of the line; B's pace then needs about 5 slots).
 * Each execution is a new conversation (no session lock serialises them).
 */
import { randomBytes } from 'node:crypto';
import os from 'node:os';
import { performance } from 'node:perf_hooks';
import { bootstrapOrganization } from '../../commands/bootstrap';
import { connectMongo, disconnectMongo } from '../../lib/mongo';
import { ApiClient } from './client';
import { BENCH_DB, startStack } from './stack';
import { fmtMs, percentile } from './stats';
import { runBench } from './run';

const say = (line: string): void => void process.stderr.write(`[fairness] ${line}\n`);
const A_TOTAL = Number(process.env.FAIR_A_TOTAL ?? 200);
const B_COUNT = Number(process.env.FAIR_B_COUNT ?? 30);
const B_EVERY_MS = Number(process.env.FAIR_B_EVERY_MS ?? 200);
const MESSAGE = process.env.FAIR_MESSAGE ?? '[chunks:10][slow:100] hi';
/** How many times one request of A is sent again after a 503 before it counts as lost. */
const A_MAX_TRIES = 50;

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
/** The api's `GET /metrics` token (read between the phases: where the admission slots went). */
const METRICS_TOKEN = randomBytes(16).toString('hex');

/**
 * @param apiUrl the api.
 * @returns the api's admission counters: slots given back per path, and the admission wait histogram's buckets.
 */
async function admissionCounters(apiUrl: string): Promise<Map<string, number>> {
  const res = await fetch(`${apiUrl}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } });
  const out = new Map<string, number>();
  for (const line of (await res.text()).split('\n')) {
    const m = /^(aas_admission_releases_total|aas_execution_admission_wait_seconds_bucket)\{([^}]*)\} (\S+)$/.exec(
      line
    );
    if (m) out.set(`${m[1]}{${m[2]}}`, Number(m[3]));
  }
  return out;
}

/** What changed between two reads of {@link admissionCounters}, in one line. */
function counterDelta(before: Map<string, number>, after: Map<string, number>): string {
  const releases: string[] = [];
  const waits: string[] = [];
  for (const [name, value] of after) {
    const d = value - (before.get(name) ?? 0);
    const label = /"([^"]+)"/.exec(name)?.[1] ?? name;
    if (name.startsWith('aas_admission_releases_total')) releases.push(`${label} ${d}`);
    else if (['0.001', '0.05', '0.1', '0.25', '0.5', '1', '+Inf'].includes(label)) waits.push(`≤${label} s: ${d}`);
  }
  return `slots given back by ${releases.join(', ')}; admission waits ${waits.join(', ')}`;
}

interface Tenant {
  client: ApiClient;
  agentId: string;
}

async function tenant(apiUrl: string, name: string): Promise<Tenant> {
  const boot = await bootstrapOrganization({ org: name, email: `${name.toLowerCase()}@example.com` });
  const client = new ApiClient(apiUrl, boot.apiToken);
  const agent = await client.json<{ id: string }>('POST', '/api/v1/agents', { name, systemPrompt: 'x' });
  return { client, agentId: agent.body.id };
}

/** One execution; a 503 is retried after its Retry-After. @returns latency (first send to answer) and 503s seen. */
async function execute(t: Tenant, retry: boolean): Promise<{ ms: number; overloaded: number }> {
  const started = performance.now();
  let overloaded = 0;
  for (let attempt = 1; ; attempt++) {
    const res = await t.client.json<{ success?: boolean }>(
      'POST',
      `/api/v1/agents/${t.agentId}/execute`,
      { message: MESSAGE },
      120_000
    );
    if (res.status === 200 && res.body.success === true) return { ms: performance.now() - started, overloaded };
    if (res.status === 503 && retry && attempt < A_MAX_TRIES) {
      overloaded++;
      await sleep(Number(res.headers?.['retry-after'] ?? 1) * 1000);
      continue;
    }
    throw new Error(`answered ${res.status} ${JSON.stringify(res.body).slice(0, 200)}`);
  }
}

/**
 * B's paced requests: one every B_EVERY_MS, each on its own (they overlap when one takes longer), streamed, so that
 * the time to its `meta` event (written once the execution was admitted: the wait in line plus the start) is told
 * apart from the whole latency (which also holds the reply, slowed by whatever else the machine runs). A refused
 * one counts as failed.
 */
async function paced(b: Tenant): Promise<{ latencies: number[]; admitted: number[]; failures: string[] }> {
  const latencies: number[] = [];
  const admitted: number[] = [];
  const failures: string[] = [];
  const runs: Promise<void>[] = [];
  for (let i = 0; i < B_COUNT; i++) {
    const s = b.client.streamExecution(b.agentId, MESSAGE, 120_000);
    runs.push(
      Promise.all([s.meta, s.ended]).then(
        ([meta, end]) => {
          admitted.push(meta.at - s.sentAt);
          latencies.push(end.at - s.sentAt);
        },
        (err: unknown) => void failures.push(err instanceof Error ? err.message : String(err))
      )
    );
    await sleep(B_EVERY_MS);
  }
  await Promise.all(runs);
  return { latencies, admitted, failures };
}

const summary = (latencies: number[]): string =>
  `p50 ${fmtMs(percentile(latencies, 50))}, p90 ${fmtMs(percentile(latencies, 90))}, max ${fmtMs(percentile(latencies, 100))}`;

async function main(): Promise<void> {
  const stack = await startStack(say, { METRICS_TOKEN });
  for (const signal of ['SIGINT', 'SIGTERM'] as const)
    process.once(signal, () => void stack.stop().finally(() => process.exit(130)));
  try {
    await connectMongo(stack.mongoUri, { dbName: BENCH_DB });
    const [a, b] = [await tenant(stack.apiUrl, 'Flood A'), await tenant(stack.apiUrl, 'Paced B')];
    await execute(a, true);
    await execute(b, false);
    // Streams: the first one's set-up is not in the figures.
    await b.client.streamExecution(b.agentId, 'warm-up').ended;
    say(`B alone: ${B_COUNT} executions, one every ${B_EVERY_MS} ms`);
    const before = await admissionCounters(stack.apiUrl);
    const idle = await paced(b);
    const between = await admissionCounters(stack.apiUrl);
    say(`  idle: ${counterDelta(before, between)}`);
    say(
      `B idle: ${summary(idle.latencies)}; to meta (admitted) ${summary(idle.admitted)}; ${idle.failures.length} failed`
    );

    say(`A floods ${A_TOTAL} executions at once; B as before`);
    let aDone = 0;
    let aOverloaded = 0;
    const aLost: string[] = [];
    const flood = Promise.all(
      Array.from({ length: A_TOTAL }, () =>
        execute(a, true).then(
          (r) => {
            aDone++;
            aOverloaded += r.overloaded;
          },
          (err: unknown) => void aLost.push(err instanceof Error ? err.message : String(err))
        )
      )
    );
    // B starts once A's burst is in line.
    await sleep(500);
    const flooded = await paced(b);
    const bDone = performance.now();
    await flood;
    say(
      `B flooded: ${summary(flooded.latencies)}; to meta (admitted) ${summary(flooded.admitted)}; ${flooded.failures.length} failed`
    );
    for (const f of new Set(flooded.failures)) say(`  B failure: ${f}`);
    say(`  flooded: ${counterDelta(between, await admissionCounters(stack.apiUrl))}`);
    const ratio = percentile(flooded.latencies, 50) / percentile(idle.latencies, 50);
    say(`B p50 flooded / idle: ${ratio.toFixed(2)} (bar: ≤ 1.5)`);
    say(
      `A: ${aDone} of ${A_TOTAL} completed, ${aOverloaded} answers 503 + Retry-After (sent again), ${aLost.length} lost; the flood ended ${fmtMs(performance.now() - bDone)} after B's last`
    );
    for (const f of new Set(aLost)) say(`  A lost: ${f}`);
    say(
      `load average ${os
        .loadavg()
        .map((l) => l.toFixed(2))
        .join(' ')}`
    );
    await disconnectMongo();
  } finally {
    await stack.stop();
  }
}

runBench(main, say);
