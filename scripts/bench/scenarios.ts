/**
 * The measurements. Each returns raw samples in milliseconds; the report turns them into percentiles. Every
 * execution starts a new conversation (no chatId / sessionId), so a session's busy lock never serialises the
 * load and the history the worker reads stays empty.
 */
import Anthropic from '@anthropic-ai/sdk';
import { performance } from 'node:perf_hooks';
import type { ApiClient } from './client';

/** A failed execution of the throughput run. */
export interface Failure {
  index: number;
  reason: string;
}

interface ExecuteReply {
  success?: boolean;
  result?: string;
  error?: unknown;
}

interface CancelReply {
  execution?: { status?: string };
}

/**
 * Runs one JSON execution and checks that it completed.
 * @param client the api client.
 * @param agentId the agent.
 * @param message the user message.
 * @param timeoutMs limit.
 * @returns the latency in ms.
 */
export async function executeJson(
  client: ApiClient,
  agentId: string,
  message: string,
  timeoutMs = 30_000
): Promise<number> {
  const started = performance.now();
  const res = await client.json<ExecuteReply>('POST', `/api/v1/agents/${agentId}/execute`, { message }, timeoutMs);
  const took = performance.now() - started;
  if (res.status !== 200 || res.body.success !== true) {
    throw new Error(`execution answered ${res.status} ${JSON.stringify(res.body).slice(0, 300)}`);
  }
  return took;
}

/**
 * Time to first delta through the platform: from sending the POST to receiving the first text delta event; the
 * stream is then read to its end, so runs do not overlap. The `meta` event's arrival splits that time: the api
 * writes it before starting the workflow, so what follows it is Temporal, the worker and the event log.
 * @param client the api client.
 * @param agentId the agent.
 * @param runs sequential executions.
 * @param message the user message.
 * @returns per run, the time to the first delta and to the `meta` event.
 */
export async function platformTtfd(
  client: ApiClient,
  agentId: string,
  runs: number,
  message: string
): Promise<{ firstDelta: number[]; meta: number[] }> {
  const out = { firstDelta: [] as number[], meta: [] as number[] };
  for (let i = 0; i < runs; i++) {
    const stream = client.streamExecution(agentId, message, 30_000);
    const meta = await stream.meta;
    const first = await stream.firstDelta;
    const end = await stream.ended;
    if (end.lastEvent !== 'result') throw new Error(`streamed execution ended with ${end.lastEvent ?? 'no event'}`);
    out.firstDelta.push(first - stream.sentAt);
    out.meta.push(meta.at - stream.sentAt);
  }
  return out;
}

/**
 * Time to first delta of the provider alone: the same request, straight to the fake with the official SDK (the
 * client the worker uses), from calling `messages.create` to the first `content_block_delta`.
 * @param baseURL the fake's address.
 * @param runs sequential requests.
 * @param message the user message.
 * @returns one sample per run.
 */
export async function providerTtfd(baseURL: string, runs: number, message: string): Promise<number[]> {
  // authToken null: an ANTHROPIC_AUTH_TOKEN in the environment must not change what is measured.
  const client = new Anthropic({ apiKey: 'bench', authToken: null, baseURL, maxRetries: 0, timeout: 30_000 });
  const samples: number[] = [];
  for (let i = 0; i < runs; i++) {
    const started = performance.now();
    const events = await client.messages.create({
      model: 'claude-bench',
      max_tokens: 4096,
      system: 'You answer briefly.',
      messages: [{ role: 'user', content: message }],
      stream: true,
    });
    let first: number | undefined;
    for await (const event of events) {
      if (first === undefined && event.type === 'content_block_delta') first = performance.now();
    }
    if (first === undefined) throw new Error('the fake streamed no content_block_delta');
    samples.push(first - started);
  }
  return samples;
}

/** Cancellation samples, measured from sending the cancel request. */
export interface CancelSamples {
  /** Until the cancel call returned (with status `cancelled`). */
  call: number[];
  /** Until the execution's event stream ended. */
  streamEnd: number[];
}

/**
 * Cancels long streamed executions right after their first delta.
 * @param client the api client.
 * @param agentId the agent.
 * @param runs sequential executions.
 * @param message a message whose reply streams for much longer than a cancellation takes.
 * @returns the samples.
 */
export async function cancellation(
  client: ApiClient,
  agentId: string,
  runs: number,
  message: string
): Promise<CancelSamples> {
  const out: CancelSamples = { call: [], streamEnd: [] };
  for (let i = 0; i < runs; i++) {
    const stream = client.streamExecution(agentId, message, 30_000);
    const { executionId: id } = await stream.meta;
    await stream.firstDelta;
    const started = performance.now();
    const res = await client.json<CancelReply>('POST', `/api/v1/executions/${id}/cancel`, {}, 15_000);
    const returned = performance.now();
    const status = res.body.execution?.status;
    if (res.status !== 200 || status !== 'cancelled') {
      stream.close();
      throw new Error(`cancel of ${id} answered ${res.status} with status ${status ?? JSON.stringify(res.body)}`);
    }
    const end = await stream.ended;
    if (end.lastEvent !== 'error') throw new Error(`cancelled stream ended with ${end.lastEvent ?? 'no event'}`);
    out.call.push(returned - started);
    out.streamEnd.push(end.at - started);
  }
  return out;
}

/** Throughput run results. */
export interface ThroughputResult {
  total: number;
  concurrency: number;
  wallMs: number;
  latencies: number[];
  failures: Failure[];
}

/**
 * Runs `total` JSON executions with `concurrency` in flight at any time.
 * @param client the api client.
 * @param agentId the agent.
 * @param total executions.
 * @param concurrency executions in flight.
 * @param message the user message.
 * @returns wall time, latencies of the successful executions, and the failures.
 */
export async function throughput(
  client: ApiClient,
  agentId: string,
  total: number,
  concurrency: number,
  message: string
): Promise<ThroughputResult> {
  return inLanes(total, concurrency, () => executeJson(client, agentId, message, 60_000));
}

/**
 * Runs an operation `total` times, `concurrency` at a time.
 * @param total how many times.
 * @param concurrency how many at once.
 * @param op one operation; resolves with its latency in ms.
 * @returns wall time, latencies of the successful operations, and the failures.
 */
export async function inLanes(
  total: number,
  concurrency: number,
  op: () => Promise<number>
): Promise<ThroughputResult> {
  const latencies: number[] = [];
  const failures: Failure[] = [];
  let next = 0;
  const started = performance.now();
  const lane = async (): Promise<void> => {
    while (next < total) {
      const index = next++;
      try {
        latencies.push(await op());
      } catch (err) {
        failures.push({ index, reason: err instanceof Error ? err.message : String(err) });
      }
    }
  };
  await Promise.all(Array.from({ length: concurrency }, lane));
  return { total, concurrency, wallMs: performance.now() - started, latencies, failures };
}

/**
 * Creates an agent (`POST /api/v1/agents`, the yardstick's body).
 * @param client the api client.
 * @returns the latency in ms.
 * @throws when the answer is not 200.
 */
export async function createAgentOnce(client: ApiClient): Promise<number> {
  const started = performance.now();
  const res = await client.json('POST', '/api/v1/agents', {
    name: 'bench-agent',
    systemPrompt: 'You are a benchmark agent.',
    role: 'Assistant',
  });
  if (res.status !== 200) throw new Error(`create agent answered ${res.status}`);
  return performance.now() - started;
}
