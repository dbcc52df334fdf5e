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
  type TLSConfig,
} from '@temporalio/client';
import type { Config } from './config';
import { temporalExtensions, type TemporalExtensionsConfig } from './dataConverter';
import { ServiceUnavailableError } from './errors';
import { pingMongo } from './mongo';
import { outsideRequestDeadline } from './requestDeadline';

export interface TemporalDeps {
  connection: Connection;
  client: Client;
  namespace: string;
  taskQueue: string;
  /**
   * A service process's client on its worker's NativeConnection (worker/create.ts `runInProcessWorker`): executions
   * are started through it with eager workflow start, so their first workflow task runs in this process at once.
   * Absent in a process without a worker: executions start through {@link client} and any worker takes them.
   */
  eager?: Client;
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

/** What the Temporal connection settings are made of (lib/config.ts). */
export type TemporalConnectionConfig = Pick<Config, 'temporalAddress' | 'temporalTls' | 'temporalApiKey'>;

/**
 * The ONE place the Temporal connection's options are built [docs/decisions.md "Temporal connection"]: address,
 * TLS (server CA, client certificate pair, server name) and API key, for the api's client (`Connection`), every
 * worker's `NativeConnection` and the admin CLI alike. Both connection kinds take these fields as they are.
 * @param config the validated settings.
 * @returns the options to spread into `Connection.lazy` / `NativeConnection.connect`.
 */
export function temporalConnectionOptions(config: TemporalConnectionConfig): {
  address: string;
  /** false: plaintext, stated (the SDK would otherwise turn TLS on by itself when an API key is set). */
  tls: TLSConfig | false;
  apiKey?: string;
} {
  return {
    address: config.temporalAddress ?? '127.0.0.1:7233',
    tls: config.temporalTls ?? false,
    ...(config.temporalApiKey ? { apiKey: config.temporalApiKey } : {}),
  };
}

/**
 * @param options connection options.
 * @returns how the connection is secured.
 */
export function connectionSecurity(
  options: ReturnType<typeof temporalConnectionOptions>
): 'plaintext' | 'TLS' | 'mTLS' {
  return options.tls ? (options.tls.clientCertPair ? 'mTLS' : 'TLS') : 'plaintext';
}

/** What the engine's words usually mean, for the settings used (the first that matches is told). */
const CONNECT_HINTS: Array<[RegExp, (o: ReturnType<typeof temporalConnectionOptions>) => boolean, string]> = [
  [
    /UnknownIssuer|unable to get (local )?issuer|self[- ]signed/i,
    (o) => Boolean(o.tls),
    "the server's certificate is not signed by TEMPORAL_TLS_CA (or, without it, by a CA the system trusts)",
  ],
  [
    /NotValidForName|altnames|does not match/i,
    (o) => Boolean(o.tls),
    "the server's certificate does not name the host; set TEMPORAL_TLS_SERVER_NAME to the name it carries",
  ],
  [
    /ConnectionReset|ECONNRESET|BrokenPipe|broken pipe|EPIPE|UnexpectedEof|close_notify|cancel|certificate required|bad certificate|unknown ca/i,
    (o) => Boolean(o.tls && o.tls.clientCertPair),
    'the server may have refused the client certificate (TEMPORAL_TLS_CERT)',
  ],
  [
    /InvalidContentType|wrong version number|packet length too long|http2.*preface|frame/i,
    (o) => Boolean(o.tls),
    'the server may not speak TLS on this port (TEMPORAL_TLS=false for a plaintext frontend)',
  ],
];

/**
 * A connection failure told in the operator's terms: the address, whether TLS / an API key were used, and the
 * engine's own words (a refused certificate, an unknown CA, a wrong server name, a refused key).
 * @param config the settings used.
 * @param err what the connection attempt threw.
 * @returns a one-line message.
 */
export function temporalConnectFailure(config: TemporalConnectionConfig, err: unknown): string {
  const options = temporalConnectionOptions(config);
  const how = [
    connectionSecurity(options),
    ...(options.apiKey ? ['API key'] : []),
    ...(options.tls && options.tls.serverNameOverride ? [`server name ${options.tls.serverNameOverride}`] : []),
  ].join(', ');
  const words = ((err as Error)?.message ?? String(err)).replace(/\s+/g, ' ').trim();
  const hint = CONNECT_HINTS.find(([pattern, when]) => pattern.test(words) && when(options))?.[2];
  return `cannot connect to Temporal at ${options.address} (${how}): ${hint ? `${hint}; ` : ''}${words}`;
}

/**
 * Creates a lazily connecting client (its data converter from lib/dataConverter.ts `temporalExtensions`).
 * @param config address, TLS, API key, namespace, task queue, the call deadline and ENCRYPTION_KEY.
 * @returns the connection and client.
 */
export function createTemporal(
  config: TemporalConnectionConfig &
    TemporalExtensionsConfig &
    Pick<Config, 'temporalNamespace' | 'temporalTaskQueue' | 'dependencyTimeoutMs'>
): TemporalDeps {
  const connection = Connection.lazy({
    ...temporalConnectionOptions(config),
    connectTimeout: config.dependencyTimeoutMs,
    interceptors: temporalInterceptors(config.dependencyTimeoutMs),
  });
  const client = new Client({ connection, namespace: config.temporalNamespace, ...temporalExtensions(config).client });
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
  /** Each wait's abort, and whether it needs the database too. */
  waiters: Map<AbortController, { database: boolean }>;
  timer?: NodeJS.Timeout;
  lastOk: number;
  checking: boolean;
  /** The last time the database answered a check (reset when the first wait that needs it joins). */
  databaseOk: number;
  checkingDatabase: boolean;
}
/** One watch per connection, shared by every wait of the process: one check per interval, not one per request. */
const watches = new WeakMap<Connection, Watch>();

/**
 * Runs a wait (a workflow's result, or an execution's stream followed to its end: commands/executions.ts
 * `awaitExecution`) while the server is watched: when it has not answered a check for `outageMs` (it is down, or hung
 * with its connections open), the wait is aborted and rejects with ServiceUnavailableError (503). A client waiting for
 * a JSON reply is never left hanging on a server that is gone. A wait that needs the database as well (its outcome
 * comes through the database: a stream's events) has it watched by the same checks (a point read, lib/mongo.ts
 * `pingMongo`, made only while such a wait is on), and is aborted the same way when it stays silent.
 * @param deps the connection.
 * @param outageMs how long the server may stay silent (DEPENDENCY_TIMEOUT_MS).
 * @param wait the wait, given the watch's signal (aborted on an outage) for a wait that is not a Temporal call.
 * @param needs `database`: the database is watched too.
 * @returns its result.
 */
export async function whileTemporalAnswers<T>(
  deps: Pick<TemporalDeps, 'connection' | 'namespace'>,
  outageMs: number,
  wait: (signal: AbortSignal) => Promise<T>,
  needs: { database?: boolean } = {}
): Promise<T> {
  let watch = watches.get(deps.connection);
  if (!watch) {
    watch = { waiters: new Map(), lastOk: Date.now(), checking: false, databaseOk: 0, checkingDatabase: false };
    watches.set(deps.connection, watch);
  }
  const w = watch;
  const abort = new AbortController();
  const database = needs.database === true;
  if (w.waiters.size === 0) {
    w.lastOk = Date.now();
    w.timer = setInterval(() => {
      const now = Date.now();
      if (now - w.lastOk >= outageMs) {
        for (const waiter of w.waiters.keys()) waiter.abort();
        return;
      }
      let databaseWaits = false;
      for (const [waiter, of] of w.waiters) {
        if (!of.database) continue;
        if (now - w.databaseOk >= outageMs) waiter.abort();
        else databaseWaits = true;
      }
      if (databaseWaits && !w.checkingDatabase) {
        w.checkingDatabase = true;
        pingMongo(outageMs)
          .then(
            () => (w.databaseOk = Date.now()),
            () => undefined
          )
          .finally(() => (w.checkingDatabase = false));
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
  if (database && ![...w.waiters.values()].some((of) => of.database)) w.databaseOk = Date.now();
  w.waiters.set(abort, { database });
  try {
    // The watch bounds this wait (a reply may take minutes): the request's deadline does not measure it.
    return await outsideRequestDeadline(() => deps.connection.withAbortSignal(abort.signal, () => wait(abort.signal)));
  } catch (err) {
    if (abort.signal.aborted) throw new ServiceUnavailableError();
    throw err;
  } finally {
    w.waiters.delete(abort);
    if (w.waiters.size === 0) clearInterval(w.timer);
  }
}
