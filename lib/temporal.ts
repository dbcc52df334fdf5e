/**
 * Temporal client factory. The api uses a lazy connection so it starts (and reports not-ready) while Temporal is
 * down; the first call connects, and the gRPC channel reconnects by itself when the server comes back.
 *
 * Outages: every call gets a deadline of `dependencyTimeoutMs` unless it set its own, and that deadline bounds all
 * the retries of the call together (temporalInterceptors), so a call to a server that is down fails within it: the
 * error middleware answers 503. The long poll that waits for a workflow's result has no deadline added.
 */
import {
  Client,
  Connection,
  isRetryableError,
  makeGrpcRetryInterceptor,
  type ConnectionOptions,
} from '@temporalio/client';
import type { Config } from './config';
import { ServiceUnavailableError } from './errors';

export interface TemporalDeps {
  connection: Connection;
  client: Client;
  namespace: string;
  taskQueue: string;
}

type Interceptor = NonNullable<ConnectionOptions['interceptors']>[number];

/** Long polls: they wait on the server by design, so no call deadline is added to them. */
const LONG_POLLS = new Set(['/temporal.api.workflowservice.v1.WorkflowService/GetWorkflowExecutionHistory']);
/** Longest wait between two attempts of a call (the SDK's default grows to 5 s, past a request's deadline). */
const RETRY_MAX_DELAY_MS = 500;
/** Attempts of a call that fails with a retryable status (UNAVAILABLE and the like), deadline permitting. */
const RETRY_MAX_ATTEMPTS = 10;

/**
 * One interceptor per connection: gives each call without a deadline `timeoutMs` (long polls excepted) and retries
 * retryable failures (UNAVAILABLE and the like) with short waits, never scheduling an attempt past the call's
 * deadline, so a call to a server that is down fails by its deadline and leaves no retry timer behind.
 * @param timeoutMs deadline given to each call that has none.
 * @returns the connection's interceptors.
 */
export function temporalInterceptors(timeoutMs: number): Interceptor[] {
  const interceptor: Interceptor = (options, nextCall) => {
    const own =
      options.deadline ?? (LONG_POLLS.has(options.method_definition.path) ? undefined : Date.now() + timeoutMs);
    const deadlineMs = own === undefined ? Infinity : new Date(own).getTime();
    let nextDelay = 0;
    const retry = makeGrpcRetryInterceptor({
      retryableDecider: (attempt, status) => {
        nextDelay = Math.min(RETRY_MAX_DELAY_MS, 100 * 1.7 ** attempt) * (0.8 + Math.random() * 0.4);
        return attempt < RETRY_MAX_ATTEMPTS && isRetryableError(status) && Date.now() + nextDelay < deadlineMs;
      },
      delayFunction: () => nextDelay,
    });
    return retry(own === undefined ? options : { ...options, deadline: own }, nextCall);
  };
  return [interceptor];
}

/**
 * Creates a lazily connecting client.
 * @param config address, namespace, task queue and the call deadline.
 * @returns the connection and client.
 */
export function createTemporal(
  config: Pick<Config, 'temporalAddress' | 'temporalNamespace' | 'temporalTaskQueue' | 'dependencyTimeoutMs'>
): TemporalDeps {
  const connection = Connection.lazy({
    address: config.temporalAddress ?? '127.0.0.1:7233',
    connectTimeout: config.dependencyTimeoutMs,
    interceptors: temporalInterceptors(config.dependencyTimeoutMs),
  });
  const client = new Client({ connection, namespace: config.temporalNamespace });
  return { connection, client, namespace: config.temporalNamespace, taskQueue: config.temporalTaskQueue };
}

/**
 * Checks that the namespace is reachable.
 * @param deps the connection and namespace.
 * @param timeoutMs deadline.
 */
export async function pingTemporal(
  deps: Pick<TemporalDeps, 'connection' | 'namespace'>,
  timeoutMs = 2000
): Promise<void> {
  await deps.connection.withDeadline(Date.now() + timeoutMs, () =>
    deps.connection.workflowService.describeNamespace({ namespace: deps.namespace })
  );
}

/** How often, while anyone waits on a long poll, the server is checked. */
const WATCH_INTERVAL_MS = 500;

interface Watch {
  waiters: Set<AbortController>;
  timer?: NodeJS.Timeout;
  lastOk: number;
  checking: boolean;
}
/** One watch per connection, shared by every wait of the process: one check per interval, not one per request. */
const watches = new WeakMap<Connection, Watch>();

/**
 * Runs a long poll (a workflow's result) while the server is watched: when it has not answered a check for
 * `outageMs` (it is down, or hung with its connections open), the wait is aborted and rejects with
 * ServiceUnavailableError (503). A client waiting for a JSON reply is never left hanging on a server that is gone.
 * @param deps the connection.
 * @param outageMs how long the server may stay silent (DEPENDENCY_TIMEOUT_MS).
 * @param wait the long poll.
 * @returns its result.
 */
export async function whileTemporalAnswers<T>(
  deps: Pick<TemporalDeps, 'connection' | 'namespace'>,
  outageMs: number,
  wait: () => Promise<T>
): Promise<T> {
  let watch = watches.get(deps.connection);
  if (!watch) {
    watch = { waiters: new Set(), lastOk: Date.now(), checking: false };
    watches.set(deps.connection, watch);
  }
  const w = watch;
  const abort = new AbortController();
  if (w.waiters.size === 0) {
    w.lastOk = Date.now();
    w.timer = setInterval(() => {
      if (Date.now() - w.lastOk >= outageMs) {
        for (const waiter of w.waiters) waiter.abort();
        return;
      }
      if (w.checking) return;
      w.checking = true;
      pingTemporal(deps, outageMs)
        .then(
          () => (w.lastOk = Date.now()),
          () => undefined
        )
        .finally(() => (w.checking = false));
    }, WATCH_INTERVAL_MS);
    w.timer.unref();
  }
  w.waiters.add(abort);
  try {
    return await deps.connection.withAbortSignal(abort.signal, wait);
  } catch (err) {
    if (abort.signal.aborted) throw new ServiceUnavailableError();
    throw err;
  } finally {
    w.waiters.delete(abort);
    if (w.waiters.size === 0) clearInterval(w.timer);
  }
}
