/**
 * `npm run bench:trace`: where a streamed execution's time to its first text delta goes (docs/benchmarks.md, issue 37
 * lever 7). The stack of bench:quick with traces on (OTLP over HTTP to a receiver in this process; lib/tracing.ts
 * gives every database command a span), streamed executions of `[chunks:200] hi` one at a time (TRACE_RUNS_C1, 20)
 * and then at concurrency 10 (TRACE_RUNS_C10, 100), each sent with a `traceparent` of its own. For each concurrency,
 * every step of the trace that starts before the client saw the first delta (the HTTP request, each database
 * command, the workflow start and run, the activities, the model call and its first delta), as medians over the
 * runs: its start and end, in ms after the request arrived, and how many executions had it. Tracing costs time
 * itself (a span per command, their export): the steps' order and shares are the point, not the absolute figures.
 * TRACE_PACED_RATE=<n>: a third phase, TRACE_RUNS_C10 executions started n a second whatever the earlier ones are doing
 * (an open loop, as a service sees traffic, where the concurrency-10 phase is a closed loop whose rate is the
 * service's own); TRACE_SPANS=0: no tracing (the client's figures alone, without tracing's cost).
 */
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import { performance } from 'node:perf_hooks';
import { bootstrapOrganization } from '../../commands/bootstrap';
import { connectMongo, disconnectMongo } from '../../lib/mongo';
import { ApiClient } from './client';
import { BENCH_DB, startStack } from './stack';
import { fmtMs, percentile } from './stats';
import { runBench } from './run';

const say = (line: string): void => void process.stderr.write(`[trace] ${line}\n`);
const RUNS_C1 = Number(process.env.TRACE_RUNS_C1 ?? 20);
const RUNS_C10 = Number(process.env.TRACE_RUNS_C10 ?? 100);
const MESSAGE = '[chunks:200] hi';
const PACED_RATE = Number(process.env.TRACE_PACED_RATE ?? 0);
const SPANS = process.env.TRACE_SPANS !== '0';

/** One span as the receiver keeps it: epoch milliseconds. */
interface Span {
  traceId: string;
  name: string;
  start: number;
  end: number;
  events: { name: string; at: number }[];
}

interface OtlpSpan {
  traceId: string;
  name: string;
  startTimeUnixNano: string | number;
  endTimeUnixNano: string | number;
  events?: { name: string; timeUnixNano: string | number }[];
}

const ms = (nano: string | number): number => Number(BigInt(String(nano)) / 1000n) / 1000;

/**
 * Receives OTLP/HTTP JSON trace exports (what @opentelemetry/exporter-trace-otlp-http sends) and keeps the spans.
 * @returns its address and the spans received so far, by trace.
 */
async function startReceiver(): Promise<{ url: string; traces: Map<string, Span[]>; close(): void }> {
  const traces = new Map<string, Span[]>();
  const server = http.createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (c: string) => (body += c));
    req.on('end', () => {
      try {
        const parsed = JSON.parse(body) as { resourceSpans?: { scopeSpans?: { spans?: OtlpSpan[] }[] }[] };
        for (const rs of parsed.resourceSpans ?? [])
          for (const ss of rs.scopeSpans ?? [])
            for (const s of ss.spans ?? []) {
              const span: Span = {
                traceId: s.traceId,
                name: s.name,
                start: ms(s.startTimeUnixNano),
                end: ms(s.endTimeUnixNano),
                events: (s.events ?? []).map((e) => ({ name: e.name, at: ms(e.timeUnixNano) })),
              };
              traces.set(s.traceId, [...(traces.get(s.traceId) ?? []), span]);
            }
      } catch (err) {
        say(`an export could not be read: ${(err as Error).message}`);
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}/v1/traces`, traces, close: () => server.close() };
}

/** One streamed execution as the client saw it (epoch milliseconds). */
interface Run {
  traceId: string;
  sent: number;
  meta: number;
  firstDelta: number;
}

const epoch = (t: number): number => performance.timeOrigin + t;

/**
 * Runs streamed executions in lanes, each with its own trace id.
 * @param client the api client.
 * @param agentId the agent.
 * @param total executions.
 * @param lanes concurrency.
 * @returns what the client saw of each.
 */
async function runStreams(client: ApiClient, agentId: string, total: number, lanes: number): Promise<Run[]> {
  const runs: Run[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: lanes }, async () => {
      while (next < total) {
        next++;
        runs.push(await runOne(client, agentId));
      }
    })
  );
  return runs;
}

/** One streamed execution with a trace id of its own, to its end. */
async function runOne(client: ApiClient, agentId: string): Promise<Run> {
  const traceId = randomBytes(16).toString('hex');
  const traceparent = `00-${traceId}-${randomBytes(8).toString('hex')}-01`;
  const stream = client.streamExecution(agentId, MESSAGE, 60_000, { traceparent });
  const meta = await stream.meta;
  const first = await stream.firstDelta;
  const end = await stream.ended;
  if (end.lastEvent !== 'result') throw new Error(`a streamed execution ended with ${end.lastEvent ?? 'none'}`);
  return { traceId, sent: epoch(stream.sentAt), meta: epoch(meta.at), firstDelta: epoch(first) };
}

/**
 * Starts streamed executions at a fixed rate (an open loop), each run to its end.
 * @returns what the client saw of each.
 */
async function runPaced(client: ApiClient, agentId: string, total: number, perSecond: number): Promise<Run[]> {
  const started: Promise<Run>[] = [];
  const t0 = performance.now();
  for (let i = 0; i < total; i++) {
    const due = t0 + (i * 1000) / perSecond;
    const wait = due - performance.now();
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    started.push(runOne(client, agentId));
  }
  return Promise.all(started);
}

/**
 * The steps of the runs' traces before their first delta, as medians.
 * @param runs the runs.
 * @param traces the spans received.
 * @returns table lines.
 */
function stepTable(runs: Run[], traces: Map<string, Span[]>): string[] {
  const steps = new Map<string, { starts: number[]; ends: number[] }>();
  const add = (name: string, start: number, end: number): void => {
    const s = steps.get(name) ?? { starts: [], ends: [] };
    s.starts.push(start);
    s.ends.push(end);
    steps.set(name, s);
  };
  let traced = 0;
  for (const run of runs) {
    const spans = (traces.get(run.traceId) ?? []).sort((a, b) => a.start - b.start);
    const http = spans.find((s) => s.name.startsWith('POST '));
    if (!http) continue;
    traced++;
    const t0 = http.start;
    const seen = new Map<string, number>();
    for (const s of spans) {
      for (const e of s.events) if (e.at <= run.firstDelta) add(`(event) ${e.name}`, e.at - t0, e.at - t0);
      if (s === http || s.start > run.firstDelta) continue;
      const n = (seen.get(s.name) ?? 0) + 1;
      seen.set(s.name, n);
      add(n === 1 ? s.name : `${s.name} #${n}`, s.start - t0, Math.min(s.end, run.firstDelta) - t0);
    }
    add('(client) meta event received', run.meta - t0, run.meta - t0);
    add('(client) first delta received', run.firstDelta - t0, run.firstDelta - t0);
    add('(client) request sent → arrived', run.sent - t0, 0);
  }
  const rows = [...steps.entries()]
    .map(([name, s]) => ({ name, n: s.starts.length, start: percentile(s.starts, 50), end: percentile(s.ends, 50) }))
    .sort((a, b) => a.start - b.start);
  const width = Math.max(...rows.map((r) => r.name.length), 10);
  return [
    `${traced} of ${runs.length} executions traced; ms after the request arrived, medians (start → end, executions)`,
    ...rows.map(
      (r) => `  ${r.name.padEnd(width)}  ${fmtMs(r.start).padStart(8)} → ${fmtMs(r.end).padStart(8)}  (${r.n})`
    ),
  ];
}

async function main(): Promise<void> {
  const receiver = await startReceiver();
  // Every span kept (a big queue) and sent often (the default waits 5 s between exports).
  const stack = await startStack(
    say,
    SPANS
      ? {
          OTEL_TRACES_EXPORTER: 'otlp',
          OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: receiver.url,
          OTEL_BSP_MAX_QUEUE_SIZE: '200000',
          OTEL_BSP_MAX_EXPORT_BATCH_SIZE: '5000',
          OTEL_BSP_SCHEDULE_DELAY: '500',
        }
      : {}
  );
  for (const signal of ['SIGINT', 'SIGTERM'] as const)
    process.once(signal, () => void stack.stop().finally(() => process.exit(130)));
  try {
    await connectMongo(stack.mongoUri, { dbName: BENCH_DB });
    const boot = await bootstrapOrganization({ org: 'Trace', email: 'trace@example.com' });
    const client = new ApiClient(stack.apiUrl, boot.apiToken);
    const agent = await client.json<{ id: string }>('POST', '/api/v1/agents', { name: 'T', systemPrompt: 'x' });
    await runStreams(client, agent.body.id, 20, 5); // warm-up
    const c1 = await runStreams(client, agent.body.id, RUNS_C1, 1);
    const c10At = performance.now();
    const c10 = await runStreams(client, agent.body.id, RUNS_C10, 10);
    say(`concurrency 10: ${((RUNS_C10 * 1000) / (performance.now() - c10At)).toFixed(1)} streams a second`);
    const paced = PACED_RATE > 0 ? await runPaced(client, agent.body.id, RUNS_C10, PACED_RATE) : [];
    await disconnectMongo();
    // The processes' last exports: they flush at shutdown.
    await stack.stop();
    for (const [label, runs] of [
      ['concurrency 1', c1],
      ['concurrency 10', c10],
      ...(PACED_RATE > 0 ? [[`${PACED_RATE} a second (open loop)`, paced] as const] : []),
    ] as const) {
      const first = runs.map((r) => r.firstDelta - r.sent);
      const meta = runs.map((r) => r.meta - r.sent);
      say(
        `${label}: first delta p50 ${fmtMs(percentile(first, 50))}, p99 ${fmtMs(percentile(first, 99))}; ` +
          `meta p50 ${fmtMs(percentile(meta, 50))}`
      );
      if (SPANS) for (const line of stepTable(runs, receiver.traces)) say(line);
    }
    say(
      `load average ${os
        .loadavg()
        .map((l) => l.toFixed(2))
        .join(' ')}`
    );
  } finally {
    await stack.stop();
    receiver.close();
  }
}

runBench(main, say);
