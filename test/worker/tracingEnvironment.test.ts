/**
 * Traces are off by default and turned on by the standard OTEL_* variables (issue 27 point 2; lib/config.ts, lib/
 * tracing.ts), and every webhook attempt is a span. An OTLP collector on loopback receives what the exporter sends
 * (the JSON of OTLP/HTTP), so the variables are followed end to end: the exporter, its endpoint, the service name.
 *
 * - In this process: `setupTracing` from the configuration of each set of variables; off, no span is recorded.
 * - A real worker process started with the variables delivers a webhook event that fails once (503) then succeeds:
 *   two `POST webhook` spans reach the collector under the configured service name, with the attempt, status and
 *   outcome of each.
 */
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { eventIdFor, recordEvent } from '../../commands/serviceEvents';
import { loadConfig } from '../../lib/config';
import { setupTracing, shutdownTracing, tracer } from '../../lib/tracing';
import { startWebhookReceiver, type WebhookReceiver } from '../../scripts/fakes/webhookReceiver';
import { useTestApp } from '../helpers/app';
import { bearer, buildOrg } from '../helpers/factories';
import { useTestDatabase } from '../helpers/mongo';
import type { Spawned } from '../helpers/processes';
import { until } from '../helpers/until';
import { deliveryOf, startWebhookWorker } from '../helpers/webhooks';

jest.setTimeout(120_000);

const db = useTestDatabase();
const queue = `tracing-env-${randomBytes(4).toString('hex')}`;
const t = useTestApp({ TEMPORAL_TASK_QUEUE: queue, WEBHOOK_ALLOW_PRIVATE: 'true' });

/** One span as the collector received it, with its resource's service name. */
interface CollectedSpan {
  service: string;
  name: string;
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  attributes: Record<string, string | number | boolean>;
  status: number;
}

type OtlpValue = { stringValue?: string; intValue?: string | number; boolValue?: boolean; doubleValue?: number };
type OtlpAttribute = { key: string; value: OtlpValue };
interface OtlpExport {
  resourceSpans: Array<{
    resource: { attributes: OtlpAttribute[] };
    scopeSpans: Array<{
      spans: Array<{
        name: string;
        traceId: string;
        spanId: string;
        parentSpanId?: string;
        attributes?: OtlpAttribute[];
        status?: { code?: number };
      }>;
    }>;
  }>;
}

const valueOf = (v: OtlpValue): string | number | boolean =>
  v.stringValue ?? (v.intValue !== undefined ? Number(v.intValue) : (v.boolValue ?? v.doubleValue ?? ''));
const attributesOf = (list: OtlpAttribute[] = []): Record<string, string | number | boolean> =>
  Object.fromEntries(list.map((a) => [a.key, valueOf(a.value)]));

/** An OTLP/HTTP traces endpoint on loopback that keeps every span it receives. */
async function startCollector(): Promise<{ url: string; spans: CollectedSpan[]; close(): Promise<void> }> {
  const spans: CollectedSpan[] = [];
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      if (req.method === 'POST' && req.url === '/v1/traces') {
        const data = JSON.parse(body) as OtlpExport;
        for (const rs of data.resourceSpans) {
          const service = String(attributesOf(rs.resource.attributes)['service.name']);
          for (const ss of rs.scopeSpans)
            for (const s of ss.spans)
              spans.push({
                service,
                name: s.name,
                traceId: s.traceId,
                spanId: s.spanId,
                ...(s.parentSpanId ? { parentSpanId: s.parentSpanId } : {}),
                attributes: attributesOf(s.attributes),
                status: s.status?.code ?? 0,
              });
        }
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    spans,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

let collector: Awaited<ReturnType<typeof startCollector>>;
let receiver: WebhookReceiver;
let worker: Spawned | undefined;

beforeAll(async () => {
  collector = await startCollector();
  receiver = await startWebhookReceiver();
});

afterAll(async () => {
  worker?.crash();
  await shutdownTracing();
  await receiver?.close();
  await collector?.close();
});

it('off unless OTEL_TRACES_EXPORTER asks (and OTEL_SDK_DISABLED=true wins); on, the spans go to the OTLP endpoint under OTEL_SERVICE_NAME', async () => {
  const endpoint = { OTEL_EXPORTER_OTLP_ENDPOINT: collector.url };
  const off: Array<Record<string, string>> = [
    { ...endpoint, OTEL_SERVICE_NAME: 'off-unset' },
    { ...endpoint, OTEL_SERVICE_NAME: 'off-none', OTEL_TRACES_EXPORTER: 'none' },
    { ...endpoint, OTEL_SERVICE_NAME: 'off-disabled', OTEL_TRACES_EXPORTER: 'otlp', OTEL_SDK_DISABLED: 'true' },
  ];
  for (const env of off) {
    expect(await setupTracing(loadConfig(env), 'api')).toBeUndefined();
    const span = tracer().startSpan('never recorded');
    expect(span.isRecording()).toBe(false);
    span.end();
  }

  const on = await setupTracing(
    loadConfig({ ...endpoint, OTEL_TRACES_EXPORTER: 'otlp', OTEL_SERVICE_NAME: 'aas-env-test' }),
    'api'
  );
  expect(on).toBeDefined();
  const probe = tracer().startSpan('probe');
  expect(probe.isRecording()).toBe(true);
  probe.end();
  await on!.provider.forceFlush();

  const mine = collector.spans.filter((s) => s.service === 'aas-env-test').map((s) => s.name);
  expect(mine).toEqual(expect.arrayContaining(['api started', 'probe']));
  expect(collector.spans.map((s) => s.service)).not.toEqual(
    expect.arrayContaining([expect.stringMatching(/^off-/) as unknown as string])
  );
});

it('a worker started with the variables traces each webhook attempt: one POST webhook span per attempt', async () => {
  worker = await startWebhookWorker({
    mongodbUri: db.uri,
    taskQueue: queue,
    caFile: receiver.caFile,
    env: {
      OTEL_TRACES_EXPORTER: 'otlp',
      OTEL_EXPORTER_OTLP_ENDPOINT: collector.url,
      OTEL_SERVICE_NAME: 'aas-worker-env-test',
      OTEL_BSP_SCHEDULE_DELAY: '200',
    },
  });
  const org = await buildOrg();
  const configured = await t.request
    .put('/api/messaging-integration')
    .set('Authorization', bearer(org.serviceToken))
    .send({ url: receiver.url });
  expect(configured.status).toBe(201);

  const key = `traced-${randomBytes(4).toString('hex')}`;
  const eventId = eventIdFor(key);
  receiver.plan(eventId, [503, 200]);
  await recordEvent({ type: 'task.updated', organizationId: org.organizationId, data: { key }, key }, t);
  await deliveryOf(eventId, 'delivered');

  const parentOf = (span: (typeof collector.spans)[number]) =>
    collector.spans.find((s) => s.traceId === span.traceId && s.spanId === span.parentSpanId);
  // The attempts and the activity spans around them: a parent ends after its child, so it may come in a later export.
  const attempts = await until(
    async () =>
      collector.spans
        .filter((s) => s.name === 'POST webhook' && s.attributes['webhook.event.id'] === eventId)
        .sort((a, b) => Number(a.attributes['webhook.attempt']) - Number(b.attributes['webhook.attempt'])),
    (found) => found.length === 2 && found.every((s) => parentOf(s) !== undefined)
  );
  const host = new URL(receiver.url);
  expect(attempts.map((s) => s.service)).toEqual(['aas-worker-env-test', 'aas-worker-env-test']);
  expect(attempts[0]!.attributes).toMatchObject({
    'http.request.method': 'POST',
    'server.address': host.hostname,
    'server.port': Number(host.port),
    'webhook.event.type': 'task.updated',
    'webhook.attempt': 1,
    'http.response.status_code': 503,
    'webhook.outcome': 'transient',
  });
  expect(attempts[0]!.status).toBe(2); // ERROR
  expect(attempts[1]!.attributes).toMatchObject({
    'webhook.attempt': 2,
    'http.response.status_code': 200,
    'webhook.outcome': 'delivered',
  });
  expect(attempts[1]!.status).not.toBe(2);
  // Each attempt runs inside the delivery activity's span (Temporal's interceptors), in the same trace.
  for (const attempt of attempts) expect(parentOf(attempt)?.name).toMatch(/^RunActivity/);
});
