/**
 * Traces (issue 27 point 2), with an in-memory exporter: one `POST …/execute` makes one trace, from the HTTP
 * request's span through the workflow start, the workflow run and its (local) activity, to the model call (and each tool call), whose
 * span carries the gen_ai attributes (system, model, input and output tokens).
 */
import { InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { installTracing, shutdownTracing } from '../../lib/tracing';
import { buildOrg } from '../helpers/factories';
import { useTestDatabase } from '../helpers/mongo';
import { until } from '../helpers/until';
import { v1As } from '../helpers/v1';
import { useExecutionStack } from '../helpers/worker';

// Installed before the stack's client and worker are built (they join tracing when it is on).
const exporter = new InMemorySpanExporter();
installTracing(new SimpleSpanProcessor(exporter), 'aas-test');
afterAll(async () => shutdownTracing());

useTestDatabase();
const stack = useExecutionStack('tracing', { DEFAULT_MODEL: 'claude-test' });

/** @returns the span's ancestors' names, nearest first, within the spans recorded. */
function ancestry(span: ReadableSpan, spans: ReadableSpan[]): string[] {
  const byId = new Map(spans.map((s) => [s.spanContext().spanId, s]));
  const names: string[] = [];
  for (let p = span.parentSpanId; p && byId.has(p); p = byId.get(p)!.parentSpanId) names.push(byId.get(p)!.name);
  return names;
}

it('one trace from POST …/execute to the model call, with gen_ai attributes', async () => {
  const org = await buildOrg();
  const as = v1As(stack.t, org.apiToken);
  const agent = await as.post('/agents', { name: 'Traced', systemPrompt: 'x' });
  exporter.reset();
  // A reply that streams for a while (five chunks 80 ms apart), so that its deltas are written as it streams: a
  // reply that ends at once is held back whole and written by the finish alone (commands/executionFinal.ts).
  const res = await as.post(`/agents/${agent.body.id}/execute`, { message: '[chunks:5][slow:80] trace me' });
  expect(res.status).toBe(200);

  const spans = await until(
    async () => exporter.getFinishedSpans(),
    (all) =>
      all.some((s) => s.name === 'POST /api/v1/agents/:id/execute') && all.some((s) => s.name.startsWith('RunWorkflow'))
  );
  const http = spans.find((s) => s.name === 'POST /api/v1/agents/:id/execute')!;
  const model = spans.find((s) => s.name === 'chat claude-test')!;
  expect(model).toBeDefined();
  const traceId = http.spanContext().traceId;
  expect(model.spanContext().traceId).toBe(traceId);
  expect(http.attributes).toMatchObject({
    'http.route': '/api/v1/agents/:id/execute',
    'http.response.status_code': 200,
  });
  expect(model.attributes).toMatchObject({
    'gen_ai.operation.name': 'chat',
    'gen_ai.system': 'anthropic',
    'gen_ai.request.model': 'claude-test',
    'gen_ai.usage.input_tokens': expect.any(Number),
    'gen_ai.usage.output_tokens': expect.any(Number),
  });
  // The chain: model call ← activity run ← activity start (in the workflow) ← workflow run ← workflow start ← HTTP.
  const chain = ancestry(
    model,
    spans.filter((s) => s.spanContext().traceId === traceId)
  );
  expect(chain).toEqual(
    expect.arrayContaining([
      expect.stringMatching(/^RunActivity/),
      expect.stringMatching(/^RunWorkflow:agentExecution/),
      expect.stringMatching(/^StartWorkflow:agentExecution/),
      'POST /api/v1/agents/:id/execute',
    ])
  );
  expect(chain.at(-1)).toBe('POST /api/v1/agents/:id/execute');
  // The model call's first text delta is marked on its span.
  expect(model.events.map((e) => e.name)).toContain('gen_ai.first_delta');
  // Each database command is a client span inside the same trace: the api's inserts under the HTTP request, the
  // reply's writes under the model loop's activity; names and attributes, never the command's contents.
  const inTrace = spans.filter((s) => s.spanContext().traceId === traceId);
  const insertExecution = inTrace.find((s) => s.name === 'insert executions');
  expect(insertExecution?.attributes).toEqual({
    'db.system': 'mongodb',
    'db.operation.name': 'insert',
    'db.namespace': expect.any(String),
    'db.collection.name': 'executions',
  });
  expect(ancestry(insertExecution!, inTrace).at(-1)).toBe('POST /api/v1/agents/:id/execute');
  const deltas = inTrace.filter((s) => s.name === 'insert stream_events');
  expect(deltas.some((s) => ancestry(s, inTrace).some((n) => n.startsWith('RunActivity')))).toBe(true);
}, 60_000);

it('a tool call is an execute_tool span inside the same trace, under the model loop’s activity', async () => {
  const org = await buildOrg();
  const as = v1As(stack.t, org.apiToken);
  const agent = await as.post('/agents', { name: 'Traced tools', systemPrompt: 'x' });
  exporter.reset();
  const res = await as.post(`/agents/${agent.body.id}/execute`, { message: '[tool:list_files {"path":""}]' });
  expect(res.status).toBe(200);

  const spans = await until(
    async () => exporter.getFinishedSpans(),
    (all) => all.some((s) => s.name === 'execute_tool list_files') && all.some((s) => s.name.startsWith('RunWorkflow'))
  );
  const http = spans.find((s) => s.name === 'POST /api/v1/agents/:id/execute')!;
  const tool = spans.find((s) => s.name === 'execute_tool list_files')!;
  expect(tool.spanContext().traceId).toBe(http.spanContext().traceId);
  expect(tool.attributes).toMatchObject({ 'gen_ai.operation.name': 'execute_tool', 'gen_ai.tool.name': 'list_files' });
  const chain = ancestry(
    tool,
    spans.filter((s) => s.spanContext().traceId === http.spanContext().traceId)
  );
  expect(chain).toEqual(
    expect.arrayContaining([expect.stringMatching(/^RunActivity/), 'POST /api/v1/agents/:id/execute'])
  );
}, 60_000);
