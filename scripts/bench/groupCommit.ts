/**
 * `npm run bench:group-commit`: what grouping inserts costs and saves (lib/groupCommit.ts; issue 37, lever 2), on
 * the embedded FerretDB and PostgreSQL alone. One operation is what creating an agent writes: a chat, an agent and
 * its space entry, inserted at once through lib/mongo.ts `insertDocument`; GC_CONCURRENCY lanes (50) each run
 * operations one after the other, GC_TOTAL (1,500) in all per run.
 *
 * Each PostgreSQL variant (GC_PG: `;`-separated, each a `,`-separated list of settings, `default` for none; e.g.
 * `default;commit_delay=200,commit_siblings=2`) gets its own FerretDB and PostgreSQL, all started at once, and the runs
 * are interleaved (GC_ROUNDS rounds of every PostgreSQL variant × every window of GC_WINDOWS, `off,tick,2`), so that
 * the other work of a shared machine weighs on each variant alike. Each run prints operations/s, latency p50 / p99
 * and the CPU ms per operation of this process (the client: what the service process would spend), FerretDB and
 * PostgreSQL (from /proc: process.cpuUsage and the servers' process trees); the end prints each variant's medians
 * and their ratio to the first variant's.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadToolConfig } from '../../lib/config';
import { connectMongo, disconnectMongo, insertDocument } from '../../lib/mongo';
import type { GroupCommitWindow } from '../../lib/groupCommit';
import { newId } from '../../lib/ids';
import { Agent, Chat, SpaceAgent } from '../../models';
import { ensureMongoServer } from '../servers/binaries';
import { freePort, startMongoStack, type MongoStack } from '../servers';
import { cpuSecondsOf } from '../lib/proc';
import { fmtMs, percentile } from './stats';

const say = (line: string): void => void process.stderr.write(`[group-commit] ${line}\n`);
const TOTAL = Number(process.env.GC_TOTAL ?? 1500);
const CONCURRENCY = Number(process.env.GC_CONCURRENCY ?? 50);
const ROUNDS = Number(process.env.GC_ROUNDS ?? 3);
const WINDOWS: GroupCommitWindow[] = (process.env.GC_WINDOWS ?? 'off,tick,2')
  .split(',')
  .map((w) => (w === 'off' || w === 'tick' ? w : Number(w)));
const PG_VARIANTS = (process.env.GC_PG ?? 'default').split(';').map((v) => v.trim());

/** One run's figures. */
interface Run {
  perSecond: number;
  p50: number;
  p99: number;
  /** CPU ms per operation: client, FerretDB, PostgreSQL. */
  client: number;
  ferretdb: number;
  postgres: number;
}

/** What creating an agent inserts (commands/agents.ts createAgent), at once. */
async function operation(): Promise<void> {
  const organizationId = 'org_bench';
  const spaceId = 'spc_bench';
  const agentId = newId('agt');
  const chatId = newId('chat');
  await Promise.all([
    insertDocument(Chat, { _id: chatId, organizationId, spaceId, agentId, ownerId: 'usr_bench', title: 'B' }),
    insertDocument(Agent, {
      _id: agentId,
      organizationId,
      userId: 'usr_bench',
      ownerId: 'usr_bench',
      name: 'B',
      role: 'Assistant',
      systemPrompt: 'x',
      visibility: 'organization',
      spaceId,
      chatId,
    }),
    insertDocument(SpaceAgent, { _id: `${spaceId}:${agentId}`, organizationId, spaceId, agentId }),
  ]);
}

/** Runs `total` operations in `CONCURRENCY` lanes. */
async function lanes(total: number): Promise<{ wallMs: number; latencies: number[] }> {
  let next = 0;
  const latencies: number[] = [];
  const started = performance.now();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < total) {
        next++;
        const t0 = performance.now();
        await operation();
        latencies.push(performance.now() - t0);
      }
    })
  );
  return { wallMs: performance.now() - started, latencies };
}

/** The stacks whose indexes are built. */
const indexed = new Set<MongoStack>();

async function measure(stack: MongoStack, window: GroupCommitWindow): Promise<Run> {
  // mongoose builds a model's indexes once per process (Model.init), so they are built here for each stack.
  await connectMongo(stack.mongo.address, { dbName: 'bench', groupCommit: window, autoIndex: false });
  try {
    if (!indexed.has(stack)) {
      await Promise.all([Chat, Agent, SpaceAgent].map((m) => m.createIndexes()));
      indexed.add(stack);
    }
    await lanes(100); // warm: connections open, collections exist
    const cpu0 = process.cpuUsage();
    const f0 = cpuSecondsOf(stack.mongo.child?.pid) ?? 0;
    const p0 = cpuSecondsOf(stack.postgres?.child?.pid) ?? 0;
    const { wallMs, latencies } = await lanes(TOTAL);
    const cpu = process.cpuUsage(cpu0);
    const f1 = cpuSecondsOf(stack.mongo.child?.pid) ?? 0;
    const p1 = cpuSecondsOf(stack.postgres?.child?.pid) ?? 0;
    return {
      perSecond: (TOTAL / wallMs) * 1000,
      p50: percentile(latencies, 50),
      p99: percentile(latencies, 99),
      client: (cpu.user + cpu.system) / 1000 / TOTAL,
      ferretdb: ((f1 - f0) * 1000) / TOTAL,
      postgres: ((p1 - p0) * 1000) / TOTAL,
    };
  } finally {
    await disconnectMongo();
  }
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

async function main(): Promise<void> {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'aas-group-commit-'));
  const server = await ensureMongoServer(loadToolConfig(), say);
  const stacks: MongoStack[] = [];
  const stopAll = async (): Promise<void> => {
    await Promise.allSettled(stacks.map((s) => s.stop()));
    rmSync(dataDir, { recursive: true, force: true });
  };
  for (const signal of ['SIGINT', 'SIGTERM'] as const)
    process.once(signal, () => void stopAll().finally(() => process.exit(130)));
  try {
    for (const [i, variant] of PG_VARIANTS.entries()) {
      const settings = variant === 'default' ? [] : variant.split(',').map((s) => s.trim());
      stacks.push(await startMongoStack(server, path.join(dataDir, String(i)), await freePort(), undefined, settings));
    }
    say(
      `${server.kind}; ${TOTAL} operations (3 inserts each) at concurrency ${CONCURRENCY}, ${ROUNDS} rounds; load ${os
        .loadavg()
        .map((l) => l.toFixed(1))
        .join(', ')}`
    );
    const runs = new Map<string, Run[]>();
    for (let round = 1; round <= ROUNDS; round++) {
      for (const [i, variant] of PG_VARIANTS.entries()) {
        for (const window of WINDOWS) {
          const name = `pg ${variant}, group commit ${window}`;
          const r = await measure(stacks[i], window);
          runs.set(name, [...(runs.get(name) ?? []), r]);
          say(
            `round ${round}, ${name}: ${r.perSecond.toFixed(0)}/s, p50 ${fmtMs(r.p50)} p99 ${fmtMs(r.p99)}, CPU ms per op client ${r.client.toFixed(2)} ferretdb ${r.ferretdb.toFixed(2)} postgres ${r.postgres.toFixed(2)}`
          );
        }
      }
    }
    say(
      `medians (ratio to the first); load ${os
        .loadavg()
        .map((l) => l.toFixed(1))
        .join(', ')}`
    );
    let base: Record<string, number> | undefined;
    for (const [name, list] of runs) {
      const m: Record<string, number> = {};
      for (const key of ['perSecond', 'p50', 'p99', 'client', 'ferretdb', 'postgres'] as const)
        m[key] = median(list.map((r) => r[key]));
      m.cpu = m.client + m.ferretdb + m.postgres;
      base ??= m;
      const ratio = (k: string): string => `${(m[k] / base![k]).toFixed(2)}×`;
      say(
        `${name}: ${m.perSecond.toFixed(0)}/s (${ratio('perSecond')}), p50 ${fmtMs(m.p50)} (${ratio('p50')}), p99 ${fmtMs(m.p99)} (${ratio('p99')}), CPU ms per op ${m.client.toFixed(2)} + ${m.ferretdb.toFixed(2)} + ${m.postgres.toFixed(2)} = ${m.cpu.toFixed(2)} (${ratio('cpu')})`
      );
    }
  } finally {
    await stopAll();
  }
}

main().catch((err) => {
  process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
