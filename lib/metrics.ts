/**
 * Metrics in Prometheus text format [docs/decisions.md "Observability: metrics"], with prom-client: one registry per
 * process, read at `GET /metrics` (the api's port, behind METRICS_TOKEN) or on METRICS_PORT (a worker-only process).
 * The Temporal SDK's own worker metrics (the Rust core's Prometheus exporter on TEMPORAL_METRICS_PORT, loopback)
 * are appended to the same answer.
 *
 * Labels never carry ids or user text: every label value comes from a short fixed list (a route's template, not its
 * path; a status code; an outcome), so the number of series stays bounded whatever the traffic.
 */
import http from 'node:http';
import client from 'prom-client';

/** This process's registry (default process metrics included: CPU, memory, event loop lag, GC). */
export const registry = new client.Registry();
client.collectDefaultMetrics({ register: registry, prefix: 'aas_' });

const seconds = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];
const longSeconds = [0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800];

/** HTTP requests by method, route template and status. */
export const httpRequests = new client.Counter({
  name: 'aas_http_requests_total',
  help: 'HTTP requests answered, by method, route template and status code',
  labelNames: ['method', 'route', 'status'] as const,
  registers: [registry],
});
/** HTTP latency by method, route template and status class. */
export const httpDuration = new client.Histogram({
  name: 'aas_http_request_duration_seconds',
  help: 'Time to answer an HTTP request (to the end of the handler; a stream counts until it ends)',
  labelNames: ['method', 'route', 'status_class'] as const,
  buckets: seconds,
  registers: [registry],
});
/** Executions started, by where they came from. */
export const repliesAbortedDirectly = new client.Counter({
  name: 'aas_replies_aborted_directly_total',
  help: 'Replies stopped by the cancel endpoint directly (in this process, or over the wake-up channel), before Temporal told them',
  registers: [registry],
});
/** Replies begun by their eager start before their local activity (activities/executionRun.ts). */
export const repliesBegunEarly = new client.Counter({
  name: 'aas_replies_begun_early_total',
  help: 'Replies of executions started eagerly that began at the start, before their workflow task scheduled them',
  registers: [registry],
});
export const executionsStartedEagerly = new client.Counter({
  name: 'aas_executions_started_eagerly_total',
  help: 'Agent executions whose first workflow task came back in the start call (eager start: it runs in this process)',
  registers: [registry],
});
export const executionsStarted = new client.Counter({
  name: 'aas_executions_started_total',
  help: 'Agent executions started, by source (v1, client, chat, mcp, job)',
  labelNames: ['source'] as const,
  registers: [registry],
});
/** Executions finished, by final status. */
export const executionsFinished = new client.Counter({
  name: 'aas_executions_finished_total',
  help: 'Agent executions finished, by status (completed, failed, cancelled)',
  labelNames: ['status'] as const,
  registers: [registry],
});
for (const status of ['completed', 'failed', 'cancelled']) executionsFinished.inc({ status }, 0);
/** Execution duration, creation to end. */
export const executionDuration = new client.Histogram({
  name: 'aas_execution_duration_seconds',
  help: 'Agent execution duration, from its creation to its end, by status',
  labelNames: ['status'] as const,
  buckets: longSeconds,
  registers: [registry],
});
/** Time to first delta. */
export const firstDelta = new client.Histogram({
  name: 'aas_execution_first_delta_seconds',
  help: 'Time from an execution’s creation to the first text delta of its reply',
  buckets: seconds,
  registers: [registry],
});
/** Open event streams. */
export const sseConnections = new client.Gauge({
  name: 'aas_sse_connections',
  help: 'Server-sent event streams open on this api process',
  registers: [registry],
});
/** Webhook attempts by outcome. */
export const webhookAttempts = new client.Counter({
  name: 'aas_webhook_attempts_total',
  help: 'Webhook delivery attempts, by outcome (delivered, transient, permanent, disabled: the destination was off)',
  labelNames: ['outcome'] as const,
  registers: [registry],
});
// Every known series is exported from the start (at 0), so that a rate or a ratio over it (deploy/prometheus) has
// data before the first event of its kind instead of an empty answer.
for (const outcome of ['delivered', 'transient', 'permanent', 'disabled']) webhookAttempts.inc({ outcome }, 0);
/** Webhook delivery lag. */
export const webhookLag = new client.Histogram({
  name: 'aas_webhook_delivery_lag_seconds',
  help: 'Time from a service event’s creation to its successful delivery',
  buckets: longSeconds,
  registers: [registry],
});
/** Webhook outbox depth. */
export const outboxDepth = new client.Gauge({
  name: 'aas_webhook_outbox_depth',
  help: 'Service events whose delivery workflow the last outbox sweep found not started',
  registers: [registry],
});
/** Rate-limit refusals. */
export const rateLimitRefusals = new client.Counter({
  name: 'aas_rate_limit_refusals_total',
  help: 'Requests refused with 429 by the rate limit',
  registers: [registry],
});

/** Executions admitted and running in this process (lib/executionAdmission.ts). */
export const executionsAdmitted = new client.Gauge({
  name: 'aas_executions_admitted',
  help: 'Executions holding an admission slot of this process (EXECUTION_CONCURRENCY bounds it)',
  registers: [registry],
});
/** Requests waiting for an admission slot. */
export const executionsWaiting = new client.Gauge({
  name: 'aas_executions_waiting',
  help: 'Execution requests waiting in line for an admission slot (EXECUTION_QUEUE bounds it)',
  registers: [registry],
});
/** Admission slots given back, by what gave them back (lib/executionAdmission.ts ReleasePath). */
export const admissionReleases = new client.Counter({
  name: 'aas_admission_releases_total',
  help: "Admission slots given back: finish (the execution's finish ran in this process), reply (the request that started it saw it end), sweep (a read of its status, for one that ran elsewhere), hold (held past the execution deadline), caller (a failed start, a refused delegation), queued (it waits for a concurrency key; it takes one again when it holds the key)",
  labelNames: ['by'] as const,
  registers: [registry],
});
for (const by of ['finish', 'reply', 'sweep', 'hold', 'caller', 'queued']) admissionReleases.inc({ by }, 0);
/** Execution requests refused by admission, by reason. */
export const executionsRefused = new client.Counter({
  name: 'aas_executions_refused_total',
  help: 'Execution requests answered 503 by admission: queue_full (line full) or wait_timeout (EXECUTION_QUEUE_WAIT_MS); fair_share: a request of the organization with the most waiting gave its place in a full line to another organization; subagent: a delegation refused (no free slot)',
  labelNames: ['reason'] as const,
  registers: [registry],
});
for (const reason of ['queue_full', 'wait_timeout', 'fair_share']) executionsRefused.inc({ reason }, 0);
/** Executions that waited for a concurrency key (activities/executionConcurrency.ts), by kind of key. */
export const executionsQueuedForKey = new client.Counter({
  name: 'aas_executions_queued_total',
  help: "Executions queued for a concurrency key: agent (the agent's maxConcurrentExecutions) or key (a caller's concurrencyKey)",
  labelNames: ['kind'] as const,
  registers: [registry],
});
for (const kind of ['agent', 'key']) executionsQueuedForKey.inc({ kind }, 0);
/** Organizations with requests in the admission line (lib/fairLine.ts; a count, no organization id as a label). */
export const admissionOrganizationsWaiting = new client.Gauge({
  name: 'aas_admission_organizations_waiting',
  help: 'Organizations with execution requests waiting in line for an admission slot',
  registers: [registry],
});
/** The most requests one organization has in the admission line (how unevenly the line is shared). */
export const admissionLargestLine = new client.Gauge({
  name: 'aas_admission_largest_organization_line',
  help: 'Execution requests the organization with the most waiting has in line for an admission slot',
  registers: [registry],
});
/** Time a request waited in line before its execution was admitted. */
export const executionAdmissionWait = new client.Histogram({
  name: 'aas_execution_admission_wait_seconds',
  help: 'Time an execution request waited for an admission slot (0 when one was free)',
  buckets: [0.001, ...seconds],
  registers: [registry],
});

/**
 * Tokens recorded in the cost ledger (commands/spend.ts), by provider (bounded: no label carries an id, so the
 * spend of each organization is the usage report's, docs/spend.md "Metrics").
 */
export const spendTokens = new client.Counter({
  name: 'aas_spend_tokens_total',
  help: 'Tokens (input + output + cache) of model calls recorded in the cost ledger, by model provider',
  labelNames: ['provider'] as const,
  registers: [registry],
});
/** USD of model calls recorded in the cost ledger, by provider. */
export const spendUsd = new client.Counter({
  name: 'aas_spend_usd_total',
  help: 'Cost in USD of model calls recorded in the cost ledger (priced models only), by model provider',
  labelNames: ['provider'] as const,
  registers: [registry],
});
/** Work a budget stopped: new executions refused (402), running ones stopped at a model call. */
export const budgetRefusals = new client.Counter({
  name: 'aas_budget_refusals_total',
  help: 'Work a spent budget stopped: `admission` (an execution refused with budget_exceeded) or `model_call` (a run stopped with budget_reached)',
  labelNames: ['at'] as const,
  registers: [registry],
});
for (const at of ['admission', 'model_call']) budgetRefusals.inc({ at }, 0);
/** budget.threshold events recorded. */
export const budgetThresholds = new client.Counter({
  name: 'aas_budget_thresholds_total',
  help: 'budget.threshold events recorded (a budget at 80 % of its limit, once per budget per period)',
  registers: [registry],
});

/** Methods kept as label values (anything else is `OTHER`). */
const METHODS = new Set(['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD', 'OPTIONS']);

/**
 * Records one HTTP request.
 * @param method the request method.
 * @param route the matched route's template (`/api/v1/agents/:id`), or undefined when none matched.
 * @param status the status code answered.
 * @param durationSeconds how long it took.
 */
export function observeHttp(method: string, route: string | undefined, status: number, durationSeconds: number): void {
  const m = METHODS.has(method) ? method : 'OTHER';
  const r = route ?? 'unmatched';
  const s = status >= 100 && status < 600 ? String(status) : 'other';
  httpRequests.inc({ method: m, route: r, status: s });
  httpDuration.observe({ method: m, route: r, status_class: `${s[0]}xx` }, durationSeconds);
}

/**
 * This process's metrics, and the Temporal SDK's when its exporter runs (TEMPORAL_METRICS_PORT).
 * @param temporalMetricsPort the SDK exporter's loopback port, if any.
 * @returns the Prometheus text.
 */
export async function renderMetrics(temporalMetricsPort?: number): Promise<string> {
  const own = await registry.metrics();
  if (!temporalMetricsPort) return own;
  const sdk = await fetch(`http://127.0.0.1:${temporalMetricsPort}/metrics`, { signal: AbortSignal.timeout(2000) })
    .then((r) => (r.ok ? r.text() : ''))
    .catch(() => '');
  return sdk ? `${own}\n${sdk}` : own;
}

/** The Content-Type of the answer. */
export const METRICS_CONTENT_TYPE = registry.contentType;

/**
 * A worker-only process's metrics server: `GET /metrics` on host:port (no other route).
 * @param host the interface.
 * @param port METRICS_PORT (0: any free port).
 * @param temporalMetricsPort TEMPORAL_METRICS_PORT.
 * @returns the listening server.
 */
export async function serveMetrics(host: string, port: number, temporalMetricsPort?: number): Promise<http.Server> {
  const server = http.createServer((req, res) => {
    if (req.method !== 'GET' || req.url !== '/metrics') {
      res.writeHead(404).end();
      return;
    }
    renderMetrics(temporalMetricsPort).then(
      (text) => res.writeHead(200, { 'Content-Type': METRICS_CONTENT_TYPE }).end(text),
      () => res.writeHead(500).end()
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, resolve);
  });
  server.unref();
  return server;
}
