/**
 * Traces [docs/decisions.md "Observability: traces"]: OpenTelemetry, off by default, on with the standard variables
 * (OTEL_TRACES_EXPORTER=otlp or console; OTEL_EXPORTER_OTLP_ENDPOINT / OTEL_EXPORTER_OTLP_TRACES_ENDPOINT;
 * OTEL_SERVICE_NAME). One trace follows a request: the HTTP request's span (api/middlewares/requestId.ts), the
 * workflow start and run, each activity and local activity (Temporal's interceptors, @temporalio/interceptors-
 * opentelemetry, wired in lib/dataConverter.ts `temporalExtensions`), each model call (`chat <model>`, with
 * gen_ai attributes: system, model, input and output tokens), each tool call (`execute_tool <name>`) and each
 * webhook attempt (`POST webhook`).
 *
 * Off, the OpenTelemetry API's tracer is a no-op and no Temporal tracing interceptor is installed.
 */
import { context, propagation, SpanKind, SpanStatusCode, trace, type Span, type Tracer } from '@opentelemetry/api';
import { Resource } from '@opentelemetry/resources';
import {
  BatchSpanProcessor,
  ConsoleSpanExporter,
  type SpanExporter,
  type SpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import type { mongo } from 'mongoose';
import type { Config } from './config';

/** The tracing of this process, once installed. */
export interface ActiveTracing {
  provider: NodeTracerProvider;
  spanProcessor: SpanProcessor;
  resource: Resource;
}

let active: ActiveTracing | undefined;

/** @returns the installed tracing, if any (read when Temporal clients and workers are built). */
export function activeTracing(): ActiveTracing | undefined {
  return active;
}

/**
 * Installs tracing with a span processor (tests: an in-memory exporter) and registers it as the global provider.
 * @param spanProcessor where spans go.
 * @param serviceName `service.name` of the spans.
 * @returns the installed tracing.
 */
export function installTracing(spanProcessor: SpanProcessor, serviceName: string): ActiveTracing {
  const resource = new Resource({ 'service.name': serviceName });
  const provider = new NodeTracerProvider({ resource, spanProcessors: [spanProcessor] });
  provider.register(); // AsyncLocalStorage context manager, W3C trace context propagation
  active = { provider, spanProcessor, resource };
  return active;
}

/**
 * Turns tracing on when the configuration asks for it (call before any Temporal client or worker is built).
 * @param config the tracing settings.
 * @param role api or worker (a suffix of service.name's instance, for people reading traces).
 * @returns the installed tracing, or undefined when off.
 */
export async function setupTracing(
  config: Pick<Config, 'observability'>,
  role: string
): Promise<ActiveTracing | undefined> {
  const settings = config.observability.tracing;
  if (!settings) return undefined;
  let exporter: SpanExporter;
  if (settings.exporter === 'console') exporter = new ConsoleSpanExporter();
  else {
    const { OTLPTraceExporter } = await import('@opentelemetry/exporter-trace-otlp-http');
    exporter = new OTLPTraceExporter(settings.endpoint ? { url: settings.endpoint } : {});
  }
  const tracing = installTracing(new BatchSpanProcessor(exporter), settings.serviceName);
  trace.getTracer('agent-automation-service').startSpan(`${role} started`).end();
  return tracing;
}

/** Flushes and stops tracing (at shutdown). */
export async function shutdownTracing(): Promise<void> {
  await active?.provider.shutdown().catch(() => undefined);
}

/** @returns the service's tracer (a no-op while tracing is off). */
export function tracer(): Tracer {
  return trace.getTracer('agent-automation-service');
}

/**
 * Gives each database command a client span (`insert stream_events`, `update executions`…) under the span that issued
 * it, from the driver's command monitoring (the client must be connected with `monitorCommands`: lib/mongo.ts does it
 * while tracing is on). The spans carry the command's name, database and collection, never its contents (they hold
 * the data). This is what shows the round trips of a request or an execution in its trace.
 * @param client the connected driver client.
 */
export function traceDatabaseCommands(client: mongo.MongoClient): void {
  if (!active) return;
  const open = new Map<number, Span>();
  client.on('commandStarted', (e) => {
    const target: unknown = e.command[e.commandName];
    const collection = typeof target === 'string' ? target : undefined;
    // Emitted in the issuing call's async context: context.active() is its span.
    const span = tracer().startSpan(collection ? `${e.commandName} ${collection}` : e.commandName, {
      kind: SpanKind.CLIENT,
      attributes: {
        'db.system': 'mongodb',
        'db.operation.name': e.commandName,
        'db.namespace': e.databaseName,
        ...(collection ? { 'db.collection.name': collection } : {}),
      },
    });
    open.set(e.requestId, span);
  });
  const end = (requestId: number, failed: boolean): void => {
    const span = open.get(requestId);
    if (!span) return;
    open.delete(requestId);
    if (failed) span.setStatus({ code: SpanStatusCode.ERROR });
    span.end();
  };
  client.on('commandSucceeded', (e) => end(e.requestId, false));
  client.on('commandFailed', (e) => end(e.requestId, true));
}

/**
 * Runs an HTTP request in its server span (continuing an incoming `traceparent`).
 * @param method the request method.
 * @param headers the request headers.
 * @param fn the request's handling; returns the route template and the status once done.
 * @returns when done.
 */
export async function traceHttpRequest(
  method: string,
  headers: Record<string, string | string[] | undefined>,
  fn: () => Promise<{ route?: string; status: number }>
): Promise<void> {
  if (!active) {
    await fn();
    return;
  }
  const parent = propagation.extract(context.active(), headers);
  const span = tracer().startSpan(
    `${method}`,
    { kind: SpanKind.SERVER, attributes: { 'http.request.method': method } },
    parent
  );
  try {
    await context.with(trace.setSpan(parent, span), async () => {
      let done: { route?: string; status: number } | undefined;
      try {
        done = await fn();
      } finally {
        if (done?.route) {
          span.updateName(`${method} ${done.route}`);
          span.setAttribute('http.route', done.route);
        }
        if (done) span.setAttribute('http.response.status_code', done.status);
        if (done && done.status >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
      }
    });
  } finally {
    span.end();
  }
}

/**
 * Runs work inside a span and ends the span: a thrown error is recorded on it and marks it as an error.
 * @param span the span, started by the caller.
 * @param fn the work.
 * @returns fn's outcome.
 */
async function endingSpan<T>(span: Span, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    span.recordException(err as Error);
    span.setStatus({ code: SpanStatusCode.ERROR });
    throw err;
  } finally {
    span.end();
  }
}

/**
 * Runs one model call in a `chat <model>` client span with the gen_ai attributes (OpenTelemetry's semantic
 * conventions for generative AI); the caller reports the usage when it is known.
 * @param call provider and model.
 * @param fn the call; receives a function to report tokens.
 * @returns fn's result.
 */
export async function traceModelCall<T>(
  call: { provider: string; model: string },
  fn: (report: (usage: { inputTokens?: number; outputTokens?: number }) => void) => Promise<T>
): Promise<T> {
  return tracer().startActiveSpan(
    `chat ${call.model}`,
    {
      kind: SpanKind.CLIENT,
      attributes: {
        'gen_ai.operation.name': 'chat',
        'gen_ai.system': call.provider,
        'gen_ai.request.model': call.model,
      },
    },
    (span: Span) =>
      endingSpan(span, () =>
        fn((usage) => {
          if (usage.inputTokens !== undefined) span.setAttribute('gen_ai.usage.input_tokens', usage.inputTokens);
          if (usage.outputTokens !== undefined) span.setAttribute('gen_ai.usage.output_tokens', usage.outputTokens);
        })
      )
  );
}

/**
 * Marks a moment on the active span (a no-op without one, or while tracing is off): e.g. a model call's first text
 * delta, which the trace of a streamed execution is read for (`npm run bench:trace`).
 * @param name the event's name.
 */
export function markActiveSpan(name: string): void {
  trace.getActiveSpan()?.addEvent(name);
}

/**
 * Runs one tool call of an execution in an `execute_tool <name>` span (OpenTelemetry's gen_ai conventions); a tool
 * error result marks the span as an error.
 * @param name the tool's name as the model called it.
 * @param fn the call.
 * @returns fn's outcome.
 */
export async function traceToolCall<T extends { isError?: boolean }>(name: string, fn: () => Promise<T>): Promise<T> {
  return tracer().startActiveSpan(
    `execute_tool ${name}`,
    { kind: SpanKind.INTERNAL, attributes: { 'gen_ai.operation.name': 'execute_tool', 'gen_ai.tool.name': name } },
    (span: Span) =>
      endingSpan(span, async () => {
        const out = await fn();
        if (out.isError) span.setStatus({ code: SpanStatusCode.ERROR });
        return out;
      })
  );
}

/** What a webhook attempt's span says about it (no URL path or query: they may carry a receiver's secret). */
export interface WebhookSendTrace {
  /** The destination (absent when it is not a URL at all). */
  url?: URL;
  eventId?: string;
  eventType?: string;
  attempt?: number;
}

/**
 * Runs one outbound webhook attempt (lib/webhookSender.ts) in a `POST webhook` client span (OpenTelemetry's HTTP
 * client conventions: method, server address and port, response status) with the event's id, type and attempt
 * number and the attempt's outcome; an attempt that did not deliver marks the span as an error.
 * @param send who is called, and for which event.
 * @param fn the attempt.
 * @returns fn's result.
 */
export async function traceWebhookSend<T extends { outcome: string; status: number | null; error: string | null }>(
  send: WebhookSendTrace,
  fn: () => Promise<T>
): Promise<T> {
  const attributes: Record<string, string | number> = { 'http.request.method': 'POST' };
  if (send.url) {
    attributes['server.address'] = send.url.hostname.replace(/^\[|\]$/g, '');
    attributes['server.port'] = Number(send.url.port || (send.url.protocol === 'http:' ? 80 : 443));
  }
  if (send.eventId) attributes['webhook.event.id'] = send.eventId;
  if (send.eventType) attributes['webhook.event.type'] = send.eventType;
  if (send.attempt !== undefined) attributes['webhook.attempt'] = send.attempt;
  return tracer().startActiveSpan('POST webhook', { kind: SpanKind.CLIENT, attributes }, async (span: Span) => {
    try {
      const out = await fn();
      span.setAttribute('webhook.outcome', out.outcome);
      if (out.status !== null) span.setAttribute('http.response.status_code', out.status);
      if (out.outcome !== 'delivered') span.setStatus({ code: SpanStatusCode.ERROR, message: out.error ?? undefined });
      return out;
    } catch (err) {
      span.recordException(err as Error);
      span.setStatus({ code: SpanStatusCode.ERROR });
      throw err;
    } finally {
      span.end();
    }
  });
}
