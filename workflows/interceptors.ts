/**
 * Workflow interceptors, bundled with the workflows (lib/dataConverter.ts `WORKFLOW_INTERCEPTOR_MODULES`).
 *
 * Request ids [docs/decisions.md "Observability: request ids"]: the workflow keeps the `x-request-id` header of its
 * start (one started without it, such as a mission run by its Schedule, takes its own workflow id), adds it to each
 * of its log lines as `reqId`, and passes it to every activity, local activity, child workflow and signal it sends.
 *
 * Traces [docs/decisions.md "Observability: traces"]: a workflow whose start carries a trace context (the client had
 * tracing on) runs Temporal's OpenTelemetry interceptors, so its run, its activities and its local activities are
 * spans of the request's trace; any other workflow skips them (no span is made while tracing is off).
 *
 * Headers are not part of a workflow's commands: histories recorded without them replay.
 */
import type {
  OpenTelemetryInboundInterceptor,
  OpenTelemetryInternalsInterceptor,
  OpenTelemetryOutboundInterceptor,
} from '@temporalio/interceptors-opentelemetry/lib/workflow';
import {
  defaultPayloadConverter,
  workflowInfo,
  type Payload,
  type WorkflowInboundCallsInterceptor,
  type WorkflowInterceptors,
  type WorkflowInternalsInterceptor,
  type WorkflowOutboundCallsInterceptor,
} from '@temporalio/workflow';

/** The header carrying the id (lib/requestContext.ts REQUEST_ID_HEADER; workflows import no lib value). */
const HEADER = 'x-request-id';
/** The header of Temporal's OpenTelemetry interceptors (their TRACE_HEADER). */
const TRACE_HEADER = '_tracer-data';

/**
 * Temporal's OpenTelemetry workflow interceptors, loaded only by a workflow whose start carries a trace context. Each
 * workflow execution evaluates the bundle's modules afresh (module state is per execution), and these pull in
 * `@opentelemetry/api` and `sdk-trace-base` (about 350 modules): imported at the top, they were 19 % of the workflow
 * thread's busy time with tracing off (docs/benchmarks.md "The service process's own CPU and memory").
 * @returns the module.
 */
const otelInterceptors = (): {
  OpenTelemetryInboundInterceptor: typeof OpenTelemetryInboundInterceptor;
  OpenTelemetryOutboundInterceptor: typeof OpenTelemetryOutboundInterceptor;
  OpenTelemetryInternalsInterceptor: typeof OpenTelemetryInternalsInterceptor;
} =>
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- evaluated on first use only (see above)
  require('@temporalio/interceptors-opentelemetry/lib/workflow');

/** This workflow's request id (module state is per workflow execution in the sandbox). */
let requestId: string | undefined;
/** Temporal's tracing interceptors, made when the start carried a trace context. */
let traced:
  | {
      inbound: OpenTelemetryInboundInterceptor;
      outbound: OpenTelemetryOutboundInterceptor;
      internals: OpenTelemetryInternalsInterceptor;
    }
  | undefined;

const withId = <T extends { headers: Record<string, Payload> }>(input: T): T =>
  requestId && !input.headers[HEADER]
    ? { ...input, headers: { ...input.headers, [HEADER]: defaultPayloadConverter.toPayload(requestId) } }
    : input;

const outbound: WorkflowOutboundCallsInterceptor = {
  scheduleActivity: (input, next) =>
    traced ? traced.outbound.scheduleActivity(withId(input), next) : next(withId(input)),
  scheduleLocalActivity: (input, next) =>
    traced ? traced.outbound.scheduleLocalActivity(withId(input), next) : next(withId(input)),
  startChildWorkflowExecution: (input, next) =>
    traced ? traced.outbound.startChildWorkflowExecution(withId(input), next) : next(withId(input)),
  signalWorkflow: (input, next) => (traced ? traced.outbound.signalWorkflow(withId(input), next) : next(withId(input))),
  continueAsNew: (input, next) => (traced ? traced.outbound.continueAsNew(withId(input), next) : next(withId(input))),
  getLogAttributes: (input, next) => {
    const withReq = requestId ? { ...input, reqId: requestId } : input;
    return traced ? traced.outbound.getLogAttributes(withReq, next) : next(withReq);
  },
};

const inbound: WorkflowInboundCallsInterceptor = {
  execute: (input, next) => {
    const given = input.headers[HEADER] && defaultPayloadConverter.fromPayload<unknown>(input.headers[HEADER]);
    requestId = typeof given === 'string' ? given : workflowInfo().workflowId;
    if (input.headers[TRACE_HEADER]) {
      const { OpenTelemetryInboundInterceptor, OpenTelemetryOutboundInterceptor, OpenTelemetryInternalsInterceptor } =
        otelInterceptors();
      traced = {
        inbound: new OpenTelemetryInboundInterceptor(),
        outbound: new OpenTelemetryOutboundInterceptor(),
        internals: new OpenTelemetryInternalsInterceptor(),
      };
      return traced.inbound.execute(input, next);
    }
    return next(input);
  },
  handleSignal: (input, next) => (traced ? traced.inbound.handleSignal(input, next) : next(input)),
};

const internals: WorkflowInternalsInterceptor = {
  dispose: (input, next) => (traced?.internals.dispose ? traced.internals.dispose(input, next) : next(input)),
};

/** @returns the interceptors of one workflow execution. */
export const interceptors = (): WorkflowInterceptors => ({
  inbound: [inbound],
  outbound: [outbound],
  internals: [internals],
});
