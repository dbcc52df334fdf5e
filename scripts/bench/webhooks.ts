/**
 * `npm run bench:webhooks`: webhook delivery throughput, not a test. Starts the whole system (scripts/bench/stack.ts)
 * with a real HTTPS receiver on loopback (its self-signed certificate trusted by the worker through
 * NODE_EXTRA_CA_CERTS, WEBHOOK_ALLOW_PRIVATE=true), configures one organization's destination over HTTP, records a
 * burst of events for that organization the way the service does (commands/serviceEvents.ts `recordEvent`, each
 * signalling the organization's delivery workflow) and measures deliveries per second until every event has arrived; then checks
 * that none was lost or duplicated. Writes its section of docs/benchmarks.md (after the kept marker).
 */
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import * as prettier from 'prettier';
import { bootstrapOrganization } from '../../commands/bootstrap';
import { recordEvent } from '../../commands/serviceEvents';
import { webhookDispatcher } from '../../commands/webhooks';
import { createLogger } from '../../lib/logger';
import { connectMongo, disconnectMongo } from '../../lib/mongo';
import { createTemporal } from '../../lib/temporal';
import { WebhookDelivery } from '../../models';
import { startWebhookReceiver } from '../fakes/webhookReceiver';
import { projectRoot } from '../servers/paths';
import { BENCH_DB, cpuSecondsByProcess, startStack, type Stack } from './stack';
import { runBench } from './run';

const EVENTS = Number(process.env.WEBHOOK_BENCH_EVENTS ?? 1000);
/** Events being recorded at once (each: an outbox write, the event insert, the workflow start). */
const EMIT_CONCURRENCY = 50;
const DELIVERY_TIMEOUT_MS = 300_000;
/** After the last delivery, how long the receiver is watched for duplicates. */
const SETTLE_MS = 5_000;
const START = '<!-- webhook-bench:start -->';
const END = '<!-- webhook-bench:end -->';

const say = (line: string): void => void process.stderr.write(`[bench:webhooks] ${line}\n`);

/** @returns the checkout's short commit (`+`: the work tree has changes besides this file's output), or `unknown`. */
function gitCommit(): string {
  try {
    const git = (...args: string[]): string =>
      execFileSync('git', args, { cwd: projectRoot(), encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    const head = git('rev-parse', '--short', 'HEAD');
    const dirty = git('status', '--porcelain', '--untracked-files=no', '--', '.', ':!docs/benchmarks.md');
    return dirty ? `${head}+` : head;
  } catch {
    return 'unknown';
  }
}

async function run(stack: Stack, receiver: Awaited<ReturnType<typeof startWebhookReceiver>>) {
  await connectMongo(stack.mongoUri, { dbName: BENCH_DB });
  const temporal = createTemporal({
    temporalAddress: stack.temporalAddress,
    temporalNamespace: 'default',
    temporalTaskQueue: stack.taskQueue,
    dependencyTimeoutMs: 10_000,
  });
  const events = {
    dispatchEvent: webhookDispatcher(temporal, createLogger({ logLevel: 'warn', logPretty: false }, 'bench')),
  };
  try {
    const org = await bootstrapOrganization({ org: 'Webhook bench', email: 'webhooks@example.com' });
    const put = await fetch(`${stack.apiUrl}/api/messaging-integration`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${org.serviceToken}`, 'content-type': 'application/json' },
      body: JSON.stringify({ url: receiver.url }),
    });
    if (put.status !== 201) throw new Error(`PUT /api/messaging-integration answered ${put.status}`);

    say('warm-up: 20 events');
    for (let i = 0; i < 20; i++)
      await recordEvent({ type: 'task.created', organizationId: org.organizationId, data: { warmup: i } }, events);
    const warmDeadline = Date.now() + 90_000;
    while (receiver.received.length < 20) {
      if (Date.now() > warmDeadline) throw new Error('warm-up deliveries did not arrive');
      await new Promise((r) => setTimeout(r, 50));
    }
    receiver.received.length = 0;

    say(`burst: ${EVENTS} events for one organization, ${EMIT_CONCURRENCY} recorded at once`);
    const cpuBefore = cpuSecondsByProcess(stack, 'bench (recorder + receiver)');
    const started = performance.now();
    let next = 0;
    let emitted = 0;
    const emitters = Array.from({ length: EMIT_CONCURRENCY }, async () => {
      while (next < EVENTS) {
        const i = next++;
        await recordEvent(
          { type: 'task.updated', organizationId: org.organizationId, data: { n: i }, key: `bench-${started}-${i}` },
          events
        );
        emitted += 1;
      }
    });
    await Promise.all(emitters);
    const emittedS = (performance.now() - started) / 1000;
    say(`recorded ${emitted} events in ${emittedS.toFixed(1)} s`);
    const deadline = Date.now() + DELIVERY_TIMEOUT_MS;
    while (new Set(receiver.received.map((r) => r.headers['service-event-id'])).size < EVENTS) {
      if (Date.now() > deadline) break;
      await new Promise((r) => setTimeout(r, 20));
    }
    const deliveredS = (performance.now() - started) / 1000;
    const cpuAfter = cpuSecondsByProcess(stack, 'bench (recorder + receiver)');
    const arrivedDistinct = new Set(receiver.received.map((r) => r.headers['service-event-id'])).size;
    await new Promise((r) => setTimeout(r, SETTLE_MS));
    const ids = receiver.received.map((r) => r.headers['service-event-id']);
    const distinct = new Set(ids).size;
    const logged = await WebhookDelivery.countDocuments({ organizationId: org.organizationId, status: 'delivered' });
    // Events that needed a second attempt (a timeout on a starved worker, say): the receiver sees them twice, rightly.
    const retried = (
      await WebhookDelivery.find({ organizationId: org.organizationId }, { attempts: 1 }).lean<
        Array<{ attempts: unknown[] }>
      >()
    ).filter((d) => d.attempts.length > 1).length;
    // CPU milliseconds per delivered event, per process (much less sensitive to the machine's load than the rate).
    const cpuMsPerEvent = Object.fromEntries(
      Object.keys(cpuAfter).map((name) => [name, ((cpuAfter[name]! - (cpuBefore[name] ?? 0)) * 1000) / arrivedDistinct])
    );
    return {
      cpuMsPerEvent,
      events: EVENTS,
      emittedS,
      deliveredS,
      arrivedDistinct,
      requests: ids.length,
      distinct,
      duplicates: ids.length - distinct,
      lost: EVENTS - distinct,
      logged: logged - 20,
      retried,
      perSecond: arrivedDistinct / deliveredS,
    };
  } finally {
    await temporal.connection.close();
    await disconnectMongo();
  }
}

async function main(): Promise<number> {
  const receiver = await startWebhookReceiver();
  let stack: Stack | undefined;
  try {
    stack = await startStack(say, { WEBHOOK_ALLOW_PRIVATE: 'true', NODE_EXTRA_CA_CERTS: receiver.caFile });
    const loadBefore = os.loadavg().map((l) => l.toFixed(1));
    const r = await Promise.race([run(stack, receiver), stack.crashed]);
    const load = os.loadavg().map((l) => l.toFixed(1));
    const cpuTotal = Object.values(r.cpuMsPerEvent).reduce((a, b) => a + b, 0);
    say(JSON.stringify(r));
    const section = [
      START,
      '',
      '## Webhook delivery throughput (`npm run bench:webhooks`)',
      '',
      `Run ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC at commit ${gitCommit()} on ` +
        `${os.cpus().length} cores, load average ${loadBefore.join(' / ')} before the run and ${load.join(' / ')} at ` +
        'the end (a shared machine: other work may have been running).',
      `A burst of ${r.events} events for one organization, recorded ${EMIT_CONCURRENCY} at a time the way the ` +
        'service records them (outbox entry, event insert, signal of `webhooks-<organizationId>` with the body, ' +
        'coalesced per process; outbox entry removed), delivered by the destination workflow in batches of ' +
        'attempts to an HTTPS receiver on loopback (TLS with kept-alive connections, signature, delivery log).',
      '',
      '| figure | value |',
      '| --- | --- |',
      `| events recorded | ${r.events} in ${r.emittedS.toFixed(1)} s |`,
      `| all delivered after | ${r.deliveredS.toFixed(1)} s |`,
      `| **deliveries per second** | **${r.perSecond.toFixed(0)}** (target ≥ 100 on 2 cores) |`,
      `| requests the receiver got / distinct event ids | ${r.requests} / ${r.distinct} |`,
      `| lost / duplicated | ${r.lost} / ${r.duplicates} |`,
      `| delivery log entries marked delivered | ${r.logged} |`,
      `| events that needed more than one attempt | ${r.retried} |`,
      '',
      'CPU per delivered event, from /proc/<pid>/stat (user + system, the process and its children) over the burst:',
      '',
      '| process | CPU ms per event |',
      '| --- | --- |',
      ...Object.entries(r.cpuMsPerEvent).map(([name, ms]) => `| ${name} | ${ms.toFixed(1)} |`),
      `| **all** | **${cpuTotal.toFixed(1)}** |`,
      '',
      `The engine (the Temporal dev server): ${(r.cpuMsPerEvent.temporal ?? Number.NaN).toFixed(1)} ms of CPU per ` +
        'event (one workflow per event cost it 12.2 ms in the 2026-11-23 run below, 24–35 ms for the engine with ' +
        'its worker side).',
      '',
      END,
    ].join('\n');
    const file = path.join(projectRoot(), 'docs', 'benchmarks.md');
    const doc = readFileSync(file, 'utf8');
    const i = doc.indexOf(START);
    const j = doc.indexOf(END);
    const updated =
      i >= 0 && j > i ? doc.slice(0, i) + section + doc.slice(j + END.length) : `${doc.trimEnd()}\n\n${section}\n`;
    writeFileSync(file, await prettier.format(updated, { filepath: file, ...(await prettier.resolveConfig(file)) }));
    say(`wrote docs/benchmarks.md`);
    return r.lost === 0 && r.duplicates === 0 ? 0 : 1;
  } finally {
    await stack?.stop();
    await receiver.close();
  }
}

runBench(main, say);
