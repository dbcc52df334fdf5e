/**
 * Request ids end to end [docs/decisions.md "Observability: request ids"]: the `x-request-id` of the request that
 * started a piece of work travels with it into Temporal as a header, so every log line of that work names it.
 *
 * - api: the requestId middleware runs each request in a context holding its id ({@link runWithRequestId}).
 * - client interceptor: every workflow start, signal and update made in such a context carries the id in the
 *   header `x-request-id`.
 * - workflow interceptors (workflows/interceptors.ts): the workflow keeps the id of its start (a workflow started
 *   without one, a mission run by its Schedule, takes its own workflow id), passes it to every activity, local
 *   activity and child workflow, and adds `reqId` to its log lines.
 * - activity interceptor: runs the activity in a context holding the id, so the pino logger (lib/logger.ts mixin)
 *   adds `reqId` to every line the activity logs, and any workflow it starts carries it on.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { defaultPayloadConverter, type Payload } from '@temporalio/common';
import type { WorkflowClientInterceptor } from '@temporalio/client';
import type { ActivityInboundCallsInterceptor, ActivityInterceptorsFactory } from '@temporalio/worker';

/** The header (HTTP and Temporal) carrying the id. */
export const REQUEST_ID_HEADER = 'x-request-id';

interface RequestStore {
  requestId: string;
  /** The logger adds `reqId` itself (activities); the api's request loggers are bound to it already. */
  log: boolean;
}

const storage = new AsyncLocalStorage<RequestStore>();

/**
 * Runs fn in a context holding a request id.
 * @param requestId the id.
 * @param fn the work.
 * @param log whether the root logger should add it to every line logged inside (false where a child logger has it).
 * @returns fn's result.
 */
export function runWithRequestId<T>(requestId: string, fn: () => T, log = false): T {
  return storage.run({ requestId, log }, fn);
}

/** @returns the id of the request (or the work) this code runs for, if any. */
export function currentRequestId(): string | undefined {
  return storage.getStore()?.requestId;
}

/**
 * @returns the header that names this work's request on an outgoing call (webhook attempts, model providers, MCP
 *   servers), so that the other side's logs can be matched with ours; none outside a request's work.
 */
export function requestIdHeaders(): { [REQUEST_ID_HEADER]?: string } {
  const requestId = currentRequestId();
  return requestId ? { [REQUEST_ID_HEADER]: requestId } : {};
}

/** @returns the fields the root logger adds to a line: `reqId` inside an activity. */
export function requestLogFields(): { reqId?: string } {
  const store = storage.getStore();
  return store?.log ? { reqId: store.requestId } : {};
}

/**
 * @param headers Temporal headers.
 * @returns the request id they carry, if any.
 */
export function requestIdOf(headers: Record<string, Payload> | undefined): string | undefined {
  const payload = headers?.[REQUEST_ID_HEADER];
  if (!payload) return undefined;
  const id = defaultPayloadConverter.fromPayload<unknown>(payload);
  return typeof id === 'string' ? id : undefined;
}

/**
 * @param headers Temporal headers.
 * @returns the headers with the current request id added (unless they carry one, or there is none).
 */
function withRequestId<H extends Record<string, Payload>>(headers: H): H {
  const id = currentRequestId();
  if (!id || headers[REQUEST_ID_HEADER]) return headers;
  return { ...headers, [REQUEST_ID_HEADER]: defaultPayloadConverter.toPayload(id) };
}

/** Client interceptor: starts, signals and updates carry the current request id. */
export const requestIdClientInterceptor: WorkflowClientInterceptor = {
  startWithDetails: (input, next) => next({ ...input, headers: withRequestId(input.headers) }),
  signalWithStart: (input, next) => next({ ...input, headers: withRequestId(input.headers) }),
  signal: (input, next) => next({ ...input, headers: withRequestId(input.headers) }),
  startUpdate: (input, next) => next({ ...input, headers: withRequestId(input.headers) }),
};

/** Activity interceptors: the activity runs (and logs) under the request id its workflow passed on. */
export const requestIdActivityInterceptors: ActivityInterceptorsFactory = () => {
  let requestId: string | undefined;
  const inbound: ActivityInboundCallsInterceptor = {
    execute: (input, next) => {
      requestId = requestIdOf(input.headers);
      return requestId ? runWithRequestId(requestId, () => next(input), true) : next(input);
    },
  };
  return {
    inbound,
    outbound: {
      // Lines logged through the activity's own Context.log (and the SDK's about this activity).
      getLogAttributes: (attributes, next) => next(requestId ? { ...attributes, reqId: requestId } : attributes),
    },
  };
};
