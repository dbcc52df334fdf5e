/**
 * Workflow interceptors, bundled with the workflows (lib/dataConverter.ts `WORKFLOW_INTERCEPTOR_MODULES`): the
 * request id of the work [docs/decisions.md "Observability: request ids"]. The workflow keeps the `x-request-id`
 * header of its start (one started without it, such as a mission run by its Schedule, takes its own workflow id),
 * adds it to each of its log lines as `reqId`, and passes it to every activity, local activity, child workflow and
 * signal it sends. Headers are not part of a workflow's commands: histories recorded without them replay.
 */
import {
  defaultPayloadConverter,
  workflowInfo,
  type Payload,
  type WorkflowInterceptors,
  type WorkflowOutboundCallsInterceptor,
} from '@temporalio/workflow';

/** The header carrying the id (lib/requestContext.ts REQUEST_ID_HEADER; workflows import no lib value). */
const HEADER = 'x-request-id';

/** This workflow's request id (module state is per workflow execution in the sandbox). */
let requestId: string | undefined;

const withId = <T extends { headers: Record<string, Payload> }>(input: T): T =>
  requestId && !input.headers[HEADER]
    ? { ...input, headers: { ...input.headers, [HEADER]: defaultPayloadConverter.toPayload(requestId) } }
    : input;

const outbound: WorkflowOutboundCallsInterceptor = {
  scheduleActivity: (input, next) => next(withId(input)),
  scheduleLocalActivity: (input, next) => next(withId(input)),
  startChildWorkflowExecution: (input, next) => next(withId(input)),
  signalWorkflow: (input, next) => next(withId(input)),
  continueAsNew: (input, next) => next(withId(input)),
  getLogAttributes: (input, next) => next(requestId ? { ...input, reqId: requestId } : input),
};

/** @returns the interceptors of one workflow execution. */
export const interceptors = (): WorkflowInterceptors => ({
  inbound: [
    {
      execute: (input, next) => {
        const given = input.headers[HEADER] && defaultPayloadConverter.fromPayload<unknown>(input.headers[HEADER]);
        requestId = typeof given === 'string' ? given : workflowInfo().workflowId;
        return next(input);
      },
    },
  ],
  outbound: [outbound],
});
