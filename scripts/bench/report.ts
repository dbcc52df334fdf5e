/**
 * Turns the samples into the figures, the stdout summary and docs/benchmarks.md.
 */
import os from 'node:os';
import type { MemoryUse } from '../lib/proc';
import type { CancelSamples, ThroughputResult } from './scenarios';
import type { LimiterRun } from './limiter';
import { SCALE_SIZES, type ScaleOperation } from './scale';
import { fmtKib, fmtMs, max, percentile } from './stats';

/** Everything a run measured. */
export interface BenchResults {
  date: Date;
  ttfd: { runs: number; message: string; platform: { firstDelta: number[]; meta: number[] }; provider: number[] };
  cancel: { runs: number; message: string; samples: CancelSamples };
  throughput: ThroughputResult & { message: string };
  memory: { api: MemoryUse; worker: MemoryUse };
  /** The database after the run. */
  database: { server: string; executions: number; streamEvents: number };
  /** Per-operation latencies with SCALE_SIZES documents stored. */
  scale: ScaleOperation[];
  /** The rate limiter's database round trips per request. */
  limiter: LimiterRun[];
  /** Seconds from the start of the run (after provisioning) to the end of the measurements. */
  elapsedS: number;
}

/** One table row: figure, value, meaning. */
type Row = [string, string, string];

function rows(r: BenchResults): Row[] {
  const { provider } = r.ttfd;
  const platform = r.ttfd.platform.firstDelta;
  const providerP50 = percentile(provider, 50);
  const t = r.throughput;
  const perSecond = t.latencies.length / (t.wallMs / 1000);
  return [
    ['Time to first delta, p50', fmtMs(percentile(platform, 50)), 'POST execute (stream) → first text delta event'],
    ['Time to first delta, p99', fmtMs(percentile(platform, 99)), ''],
    [
      'Time to meta event, p50',
      fmtMs(percentile(r.ttfd.platform.meta, 50)),
      'POST execute (stream) → `meta` event: the api part',
    ],
    ['Provider time to first delta, p50', fmtMs(providerP50), 'SDK straight to the fake → first content delta'],
    ['Provider time to first delta, p99', fmtMs(percentile(provider, 99)), ''],
    ['Platform added, p50', fmtMs(percentile(platform, 50) - providerP50), 'platform p50 − provider p50'],
    ['Platform added, p99', fmtMs(percentile(platform, 99) - providerP50), 'platform p99 − provider p50'],
    ['Cancel call, p50', fmtMs(percentile(r.cancel.samples.call, 50)), 'POST cancel → reply with status cancelled'],
    ['Cancel call, max', fmtMs(max(r.cancel.samples.call)), ''],
    ['Cancel to stream end, p50', fmtMs(percentile(r.cancel.samples.streamEnd, 50)), 'POST cancel → SSE response ends'],
    ['Cancel to stream end, max', fmtMs(max(r.cancel.samples.streamEnd)), ''],
    ['Throughput', `${perSecond.toFixed(1)} exec/s`, `${t.total} JSON executions, ${t.concurrency} in flight`],
    ['Execution latency, p50', fmtMs(percentile(t.latencies, 50)), 'POST execute (JSON) → complete reply'],
    ['Execution latency, p99', fmtMs(percentile(t.latencies, 99)), ''],
    ['Failed executions', String(t.failures.length), 'of the throughput run'],
    ['api RSS / peak', `${fmtKib(r.memory.api.rssKib)} / ${fmtKib(r.memory.api.peakKib)}`, 'after the throughput run'],
    [
      'worker RSS / peak',
      `${fmtKib(r.memory.worker.rssKib)} / ${fmtKib(r.memory.worker.peakKib)}`,
      'after the throughput run',
    ],
    ...r.limiter.map((run): Row => [
      `Rate limiter, ${run.concurrency} in flight`,
      `${(run.upserts / run.requests).toFixed(2)} round trips/request, p50 ${fmtMs(percentile(run.latencies, 50))}`,
      `${run.requests} requests of one identity counted with ${run.upserts} upserts`,
    ]),
  ];
}

/** Scale rows: operation, p50 and p99 at each size, and the ratio of the p50s (large ÷ small). */
function scaleRows(r: BenchResults): string[][] {
  return r.scale.map((op) => {
    const p50 = op.samples.map((s) => percentile(s, 50));
    const p99 = op.samples.map((s) => percentile(s, 99));
    return [
      op.name,
      ...SCALE_SIZES.map((_, i) => `${fmtMs(p50[i])} / ${fmtMs(p99[i])}`),
      (p50[p50.length - 1] / p50[0]).toFixed(2),
    ];
  });
}

/**
 * @param r the results.
 * @returns a plain-text table for the terminal.
 */
export function renderSummary(r: BenchResults): string {
  const table = rows(r);
  const w0 = Math.max(...table.map((row) => row[0].length));
  const w1 = Math.max(...table.map((row) => row[1].length));
  const lines = table.map(([k, v, note]) => `${k.padEnd(w0)}  ${v.padStart(w1)}  ${note}`.trimEnd());
  const scale = scaleRows(r).map((row) => row.join('  '));
  return [...lines, '', ...scale, `(measured in ${r.elapsedS.toFixed(0)} s)`].join('\n');
}

/**
 * Wraps one paragraph or list item for the markdown file (prettier keeps prose as written, so the lengths of the
 * interpolated values would otherwise decide where lines break).
 * @param text the paragraph on one line.
 * @param first prefix of the first line (`- ` for a list item).
 * @param width longest line.
 * @returns the wrapped lines; continuation lines are indented under the first line's text.
 */
function wrap(text: string, first = '', width = 110): string[] {
  const indent = ' '.repeat(first.length);
  const lines: string[] = [];
  let line = first;
  // A code span with spaces stays on one line: prettier would otherwise re-indent a line that starts inside it.
  for (const word of text.match(/[^\s`]*`[^`]*`[^\s`]*|\S+/g) ?? []) {
    const prefix = lines.length === 0 ? first : indent;
    // A word like `0.` or `-` at the start of a line would begin a list, so it never starts one.
    const startsBlock = /^(\d+[.)]|[-+*#>])$/.test(word);
    if (line.length > prefix.length && line.length + 1 + word.length > width && !startsBlock) {
      lines.push(line);
      line = indent + word;
    } else {
      line += line.length > prefix.length ? ` ${word}` : word;
    }
  }
  lines.push(line);
  return lines;
}

/**
 * @param r the results.
 * @returns docs/benchmarks.md.
 */
export function renderMarkdown(r: BenchResults): string {
  const cpu = os.cpus();
  const machine =
    `${cpu[0]?.model.trim() ?? 'unknown CPU'}, ${cpu.length} cores, ` +
    `${(os.totalmem() / 1024 ** 3).toFixed(1)} GiB memory, Node ${process.version}, ${os.platform()} ${os.arch()}`;
  const ferret = r.database.server === 'ferretdb';
  const dbName = ferret ? 'FerretDB 1.24 (MongoDB-compatible) on an embedded PostgreSQL 17' : 'MongoDB (mongod)';
  const cell = (s: string): string => s.replace(/\|/g, '\\|');
  const t = r.throughput;
  return [
    '# Benchmarks',
    '',
    `Generated by \`npm run bench\` (scripts/bench) on ${r.date.toISOString()}.`,
    '',
    `Machine: ${machine}.`,
    '',
    ...wrap(
      `Everything runs on this one machine over 127.0.0.1: ${dbName} and the Temporal dev server with a fresh ` +
        'data directory, the api and the worker as separate node processes (`node --import tsx`, LOG_LEVEL warn), ' +
        'and a fake Anthropic API (scripts/fakes/anthropic.ts) that answers instantly. The figures are therefore ' +
        "the platform's own overhead, not model latency. The benchmark client shares the machine's cores."
    ),
    '',
    '## What is measured',
    '',
    ...wrap(
      `**Time to first delta**: ${r.ttfd.runs} sequential streamed executions (\`${r.ttfd.message}\`), each in a ` +
        'new conversation: client time from sending `POST /api/v1/agents/{id}/execute` with `stream: true` to ' +
        'receiving the first `message` event with a text delta. **Time to meta event** is the part spent in the ' +
        'api before it starts the workflow (it writes `meta` first). **Provider time to first delta** is the same ' +
        `request sent ${r.ttfd.runs} times straight to the fake with the official SDK, to the first ` +
        '`content_block_delta`. **Platform added** is the platform percentile minus the provider p50.',
      '- '
    ),
    ...wrap(
      `**Cancellation**: ${r.cancel.runs} streamed executions (\`${r.cancel.message}\`) cancelled with ` +
        '`POST /api/v1/executions/{id}/cancel` right after their first delta: time from sending the cancel until ' +
        'it returns with status `cancelled`, and until the execution stream ends (after its `error` event).',
      '- '
    ),
    ...wrap(
      `**Throughput**: ${t.total} JSON executions (\`${t.message}\`), ${t.concurrency} in flight at any time, ` +
        'each in a new conversation: completed executions per second of wall time, and the latency of each from ' +
        'request to complete reply. Failures must be 0.',
      '- '
    ),
    ...wrap(
      '**Memory**: resident set (VmRSS) and its peak (VmHWM) of the api and worker processes, from ' +
        '`/proc/<pid>/status` after the throughput run.',
      '- '
    ),
    '',
    ...wrap(
      `p99 is nearest-rank: with ${r.ttfd.runs} samples it is the slowest one. The database grows during the ` +
        `run; at its end it holds ${r.database.executions} executions and ${r.database.streamEvents} stream events.` +
        (ferret
          ? ' Every query is answered from an index (docs/query-shapes.md), so a larger database is not a ' +
            'slower one: the scale phase below measures exactly that.'
          : '')
    ),
    '',
    '## Results',
    '',
    '| Figure | Value | Meaning |',
    '| --- | --: | --- |',
    ...rows(r).map(([k, v, note]) => `| ${cell(k)} | ${cell(v)} | ${cell(note)} |`),
    '',
    '## Scale: the same operations with 1,000 and with 50,000 documents stored',
    '',
    ...wrap(
      'After the runs above, the agents collection is filled directly to 1,000 documents, then to 50,000 (spread ' +
        'over 100 other organizations; the bench organization holds 100 agents at both sizes). At each size every ' +
        'operation runs 200 times one after the other over HTTP. Ratio = p50 at 50,000 ÷ p50 at 1,000; the ' +
        'target is at most 1.5.'
    ),
    '',
    `| Operation | ${SCALE_SIZES.map((n) => `${n.toLocaleString('en-US')} docs: p50 / p99`).join(' | ')} | Ratio |`,
    `| --- | ${SCALE_SIZES.map(() => '--:').join(' | ')} | --: |`,
    ...scaleRows(r).map((row) => `| ${row.map(cell).join(' | ')} |`),
    '',
  ].join('\n');
}
