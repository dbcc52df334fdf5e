/**
 * The starter dashboard and the alert rules (deploy/; README "Operating it") query what a running service exports:
 * a service process (worker/service.ts) with METRICS_TOKEN and the Temporal SDK's metrics on (TEMPORAL_METRICS_PORT)
 * serves an execution, then every metric name a panel or a rule queries is in its `GET /metrics`.
 */
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';
import { freePort } from '../scripts/servers/launch';
import { childTestEnv } from './helpers/env';
import { bearer, buildOrg } from './helpers/factories';
import { useTestDatabase } from './helpers/mongo';
import { ROOT, spawnScript, type Spawned } from './helpers/processes';
import { until } from './helpers/until';

const db = useTestDatabase();

interface Panel {
  title: string;
  targets?: Array<{ expr: string; refId: string }>;
  fieldConfig?: { defaults?: { unit?: string } };
}
interface Rule {
  alert: string;
  expr: string;
  for?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}
const dashboard = JSON.parse(readFileSync(path.join(ROOT, 'deploy/grafana/dashboard.json'), 'utf8')) as {
  panels: Panel[];
};
const alerts = parse(readFileSync(path.join(ROOT, 'deploy/prometheus/alerts.yml'), 'utf8')) as {
  groups: Array<{ name: string; rules: Rule[] }>;
};
const rules = alerts.groups.flatMap((g) => g.rules);
/** Every query of the dashboard and the rules, with where it is. */
const queries = [
  ...dashboard.panels.flatMap((p) => (p.targets ?? []).map((t) => ({ where: `panel "${p.title}"`, expr: t.expr }))),
  ...rules.map((r) => ({ where: `alert ${r.alert}`, expr: r.expr })),
];
/** The metric names a query reads (the service's are `aas_…`, the Temporal SDK's `temporal_…`). */
const metricNames = (expr: string): string[] => [...expr.matchAll(/\b(?:aas|temporal)_[a-z0-9_]+\b/g)].map((m) => m[0]);
/** Prometheus's own series of a scrape target (not in any /metrics answer). */
const PROMETHEUS_OWN = /^up\{job="agent-automation-service"\} == 0$/;

describe('the queries themselves', () => {
  it('every panel and rule queries at least one metric of the service or the SDK', () => {
    expect(queries.length).toBeGreaterThan(15);
    for (const q of queries)
      expect([q.where, metricNames(q.expr).length > 0 || PROMETHEUS_OWN.test(q.expr)]).toEqual([q.where, true]);
  });

  it('no query joins two series with `or` (it drops the second where the first has the same labels): one target each', () => {
    for (const q of queries) expect([q.where, q.expr]).toEqual([q.where, expect.not.stringMatching(/\)\s+or\s+/)]);
  });

  it('the SDK reports durations in milliseconds: its latency panels say so', () => {
    const temporal = dashboard.panels.filter((p) => p.targets?.some((t) => /temporal_\w+_latency/.test(t.expr)));
    expect(temporal.length).toBeGreaterThan(0);
    for (const p of temporal) {
      expect(p.fieldConfig?.defaults?.unit).toBe('ms');
      expect(p.title).toMatch(/\(ms\)$/);
    }
  });

  it('alert rules page on what an operator must act on, each with a severity, a wait and a summary', () => {
    const names = rules.map((r) => r.alert);
    for (const a of [
      'ServiceHighErrorRatio',
      'ExecutionsFailing',
      'WebhookDeliveryLagging',
      'WebhookOutboxBacklog',
      'ExecutionsRefused',
      'ServiceMetricsDown',
    ])
      expect(names).toContain(a);
    for (const r of rules) {
      expect([r.alert, r.labels?.severity]).toEqual([r.alert, expect.stringMatching(/^(page|ticket)$/)]);
      expect([r.alert, r.for]).toEqual([r.alert, expect.stringMatching(/^\d+[smh]$/)]);
      expect([r.alert, r.annotations?.summary]).toEqual([r.alert, expect.any(String)]);
    }
  });
});

describe('a running service with Temporal SDK metrics on', () => {
  const token = randomBytes(16).toString('hex');
  let service: Spawned;
  let base: string;

  beforeAll(async () => {
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    service = spawnScript(
      'worker/service.ts',
      childTestEnv({
        MONGODB_URI: db.uri,
        PORT: String(port),
        METRICS_TOKEN: token,
        TEMPORAL_METRICS_PORT: String(await freePort()),
        TEMPORAL_TASK_QUEUE: `monitoring-${randomBytes(4).toString('hex')}`,
        WORKFLOW_BUNDLE: process.env.AAS_WORKFLOW_BUNDLE ?? '',
        ANTHROPIC_API_KEY: '',
        OPENAI_API_KEY: '',
      })
    );
    await service.waitFor(/worker started/, 90_000);
  }, 120_000);

  afterAll(async () => {
    service.child.kill('SIGTERM');
    await service.exited();
  });

  it('exports every metric a panel or a rule queries', async () => {
    // Traffic: an execution (served by the built-in model), an unknown route.
    const org = await buildOrg();
    const post = (url: string, body: unknown): Promise<Response> =>
      fetch(`${base}${url}`, {
        method: 'POST',
        headers: { authorization: bearer(org.apiToken), 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
    const agent = (await (await post('/api/v1/agents', { name: 'Watcher', systemPrompt: 'x' })).json()) as {
      id: string;
    };
    expect((await post(`/api/v1/agents/${agent.id}/execute`, { message: 'hello' })).status).toBe(200);
    expect((await fetch(`${base}/api/v1/nothing-here`)).status).toBe(404);

    // The answer comes with the execution's outcome, just before its workflow task completes: the SDK's workflow task
    // metrics follow a moment later.
    const scrape = async (): Promise<{ status: number; text: string }> => {
      const res = await fetch(`${base}/metrics`, { headers: { authorization: `Bearer ${token}` } });
      return { status: res.status, text: await res.text() };
    };
    const { status, text } = await until(
      scrape,
      (r) => r.status !== 200 || r.text.includes('temporal_workflow_task_execution_latency_bucket'),
      30_000,
      100,
      "the SDK's workflow task metrics"
    );
    expect(status).toBe(200);
    const exported = new Set(
      text
        .split('\n')
        .filter((l) => l && !l.startsWith('#'))
        .map((l) => /^[a-zA-Z_:][\w:]*/.exec(l)![0])
    );
    // The SDK's metrics are there (TEMPORAL_METRICS_PORT), not only the service's own.
    expect([...exported].some((n) => n.startsWith('temporal_'))).toBe(true);
    const missing = queries.flatMap((q) =>
      metricNames(q.expr)
        .filter((n) => !exported.has(n))
        .map((n) => `${q.where}: ${n}`)
    );
    expect(missing).toEqual([]);
  }, 60_000);
});
