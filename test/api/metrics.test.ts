/**
 * Metrics (issue 27 point 1): `GET /metrics` answers Prometheus text for the holder of METRICS_TOKEN only; after
 * real traffic (an execution over JSON and over a stream, an unknown route, rate-limit refusals) it counts requests
 * by route template, executions started and finished, time to first delta, durations, open streams and refusals;
 * and no label value carries an id or user text (bounded cardinality).
 */
import { randomBytes } from 'node:crypto';
import { bearer, buildOrg } from '../helpers/factories';
import { useTestDatabase } from '../helpers/mongo';
import { openSse } from '../helpers/sse';
import { until } from '../helpers/until';
import { v1As } from '../helpers/v1';
import { useExecutionStack } from '../helpers/worker';

useTestDatabase();
const METRICS_TOKEN = randomBytes(16).toString('hex');
const stack = useExecutionStack('metrics', { METRICS_TOKEN, RATE_LIMIT_REQUESTS: '2' });

interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** Parses the Prometheus text exposition format (sample lines only). */
function parse(text: string): Sample[] {
  return text
    .split('\n')
    .filter((l) => l && !l.startsWith('#'))
    .map((line) => {
      const m = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})?\s+(\S+)/.exec(line)!;
      const labels: Record<string, string> = {};
      for (const [, k, v] of (m[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) labels[k] = v;
      return { name: m[1], labels, value: Number(m[3]) };
    });
}

const scrape = async (): Promise<Sample[]> => {
  const res = await stack.t.request.get('/metrics').set('Authorization', `Bearer ${METRICS_TOKEN}`);
  expect(res.status).toBe(200);
  expect(res.headers['content-type']).toMatch(/^text\/plain/);
  return parse(res.text);
};
const value = (samples: Sample[], name: string, labels: Record<string, string> = {}): number =>
  samples
    .filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))
    .reduce((sum, s) => sum + s.value, 0);

it('only the holder of METRICS_TOKEN reads /metrics', async () => {
  expect((await stack.t.request.get('/metrics')).status).toBe(401);
  expect((await stack.t.request.get('/metrics').set('Authorization', 'Bearer nope')).status).toBe(401);
  const org = await buildOrg();
  expect((await stack.t.request.get('/metrics').set('Authorization', bearer(org.apiToken))).status).toBe(401);
});

it('counts the traffic by route template and outcome; no label value carries an id or user text', async () => {
  const before = await scrape();
  const org = await buildOrg();
  const as = v1As(stack.t, org.apiToken);
  const secret = `user-text-${randomBytes(4).toString('hex')}`;
  const agent = await as.post('/agents', { name: secret, systemPrompt: 'x' });
  const agentId: string = agent.body.id;
  expect((await as.post(`/agents/${agentId}/execute`, { message: `hello ${secret}` })).status).toBe(200);
  const failed = await as.post(`/agents/${agentId}/execute`, { message: 'bad [fail:400]' });
  expect(failed.status).toBe(500);
  const base = await stack.t.listen();
  const stream = await openSse(`${base}/api/v1/agents/${agentId}/execute`, {
    method: 'POST',
    headers: { authorization: bearer(org.apiToken) },
    body: { message: '[chunks:3][slow:300]', stream: true },
  });
  // While the stream is open, it is counted.
  const during = await scrape();
  expect(value(during, 'aas_sse_connections')).toBeGreaterThanOrEqual(1);
  await stream.ended;
  await stack.t.request.get(`/api/v1/nothing-here/${secret}`);
  // Over the current surface's budget (2 per window): refused.
  for (let i = 0; i < 4; i++) await stack.t.request.get('/api/agents').set('Authorization', bearer(org.serviceToken));

  // The streamed execution's finish is counted right after its terminal event was written.
  const after = await until(
    scrape,
    (now) =>
      value(now, 'aas_executions_finished_total', { status: 'completed' }) -
        value(before, 'aas_executions_finished_total', { status: 'completed' }) >=
      2,
    20_000
  );
  const grew = (name: string, labels: Record<string, string> = {}): number =>
    value(after, name, labels) - value(before, name, labels);
  expect(grew('aas_http_requests_total', { method: 'POST', route: '/api/v1/agents/:id/execute', status: '200' })).toBe(
    2
  );
  expect(grew('aas_http_requests_total', { method: 'POST', route: '/api/v1/agents/:id/execute', status: '500' })).toBe(
    1
  );
  expect(grew('aas_http_requests_total', { route: 'unmatched', status: '404' })).toBe(1);
  expect(grew('aas_http_request_duration_seconds_count', { route: '/api/v1/agents/:id/execute' })).toBe(3);
  expect(grew('aas_executions_started_total', { source: 'v1' })).toBe(3);
  expect(grew('aas_executions_finished_total', { status: 'completed' })).toBe(2);
  expect(grew('aas_executions_finished_total', { status: 'failed' })).toBe(1);
  expect(grew('aas_execution_duration_seconds_count', { status: 'completed' })).toBe(2);
  expect(grew('aas_execution_first_delta_seconds_count')).toBe(2);
  expect(grew('aas_rate_limit_refusals_total')).toBe(2);
  expect(value(after, 'aas_sse_connections')).toBe(value(before, 'aas_sse_connections'));
  expect(value(after, 'aas_process_cpu_seconds_total')).toBeGreaterThan(0);

  // Bounded label values: nothing of the ids or the text of this traffic, routes are templates.
  const ids = [agentId, org.organizationId, secret, failed.body.executionId].filter(Boolean);
  const idLike = /(exec-\d|agt_|org_|usr_|chat_|ses_|spc_|job_|evt_|msn_|td_|svc_|user-text)/;
  for (const s of after) {
    for (const [label, v] of Object.entries(s.labels)) {
      expect({ metric: s.name, label, value: v, idLike: idLike.test(v) || ids.some((id) => v.includes(id)) }).toEqual({
        metric: s.name,
        label,
        value: v,
        idLike: false,
      });
    }
  }
  const routes = new Set(after.filter((s) => s.labels.route).map((s) => s.labels.route));
  for (const r of routes) expect(r).toMatch(/^(unmatched|\/[A-Za-z0-9_\-/.:*]*)$/);
  const allowed: Record<string, RegExp> = {
    method: /^(GET|POST|PUT|PATCH|DELETE|HEAD|OPTIONS|OTHER)$/,
    status: /^(\d{3}|other|completed|failed|cancelled)$/,
    status_class: /^\dxx$/,
    source: /^(v1|client|chat|mcp|job)$/,
    outcome: /^(delivered|transient|permanent|disabled)$/,
  };
  for (const s of after.filter((x) => x.name.startsWith('aas_') && !x.name.startsWith('aas_process_')))
    for (const [label, re] of Object.entries(allowed))
      if (s.labels[label] !== undefined) expect(s.labels[label]).toMatch(re);
}, 90_000);
