/**
 * The service configuration: the ONLY module that reads `process.env` (docs/architecture.md §9).
 *
 * `loadConfig(env)` is pure: it validates every variable at once and throws a ConfigError listing each problem,
 * so start-up prints all bad values together (one line each) and exits 1. Everyone else receives a frozen
 * `Config` object.
 */
import os from 'node:os';
import path from 'node:path';
import ms from 'ms';
import ipaddr from 'ipaddr.js';
import { temporalTls, type TemporalTls } from './configTemporal';
import type { GroupCommitWindow } from './groupCommit';
import { DEFAULT_MODEL_PRICES, parseModelPrices, type PriceTable } from './prices';
import { isLoopbackHostname } from './safeDestination';

/** Validated, typed configuration of the api, the worker and the scripts. */
export interface Config {
  /** HTTP port of the api. @default 3000 */
  port: number;
  /** Interface the api listens on. @default 127.0.0.1 */
  host: string;
  /** Public base address of the current surface (links, manifests). @default http://<host>:<port> */
  appUrl: string;
  /** MongoDB connection string; unset in `npm run dev` means "start the embedded server". */
  mongodbUri?: string;
  /** Temporal frontend address (host:port); unset in `npm run dev` means "start the embedded dev server". */
  temporalAddress?: string;
  /** Temporal namespace. @default default */
  temporalNamespace: string;
  /**
   * TLS to the Temporal frontend (lib/temporal.ts `temporalConnectionOptions`); unset: plaintext. On as soon as any
   * of TEMPORAL_TLS_CERT / _KEY / _CA (or their `_PATH` forms), TEMPORAL_TLS_SERVER_NAME or TEMPORAL_API_KEY is set,
   * or TEMPORAL_TLS=true; TEMPORAL_TLS=false turns it off (only without certificates).
   */
  temporalTls?: TemporalTls;
  /** Temporal Cloud API key, sent as `Authorization: Bearer <key>` (TEMPORAL_API_KEY). */
  temporalApiKey?: string;
  /** Task queue served by the worker. @default agent-service */
  temporalTaskQueue: string;
  /** How long stream events and the delivery log are kept. @default 30 days each */
  retention: Retention;
  /**
   * A file the worker rewrites every few seconds while it polls its task queue (worker/health.ts); the container's
   * health check (`node dist/scripts/healthcheck.js worker`) fails when it is missing or stale. Unset: no file.
   */
  workerHealthFile?: string;
  anthropicApiKey?: string;
  anthropicBaseUrl?: string;
  openaiApiKey?: string;
  openaiBaseUrl?: string;
  /** DEFAULT_MODEL; unset: the configured provider's default model (lib/providers resolveModel). */
  defaultModel?: string;
  /** 32-byte key (64 hex chars or base64) for AES-256-GCM secrets at rest. */
  encryptionKey?: Buffer;
  /** Allow webhooks and clones to private / loopback addresses. @default false */
  webhookAllowPrivate: boolean;
  /**
   * One webhook attempt's whole HTTP exchange (connect, TLS, request, answer); past it the attempt is a transient
   * failure. At most 15 s: the attempt's local activity has 20 s for the exchange and its delivery-log write.
   * @default 10000
   */
  webhookTimeoutMs: number;
  /**
   * Webhook retries past the spec's 0 s, 1 s, 2 s and 4 s (docs/decisions.md "Webhook delivery by destination"):
   * the long tail of waits (WEBHOOK_RETRY_TAIL; its last wait repeats), how long after its first attempt an event is
   * still retried (WEBHOOK_RETRY_FOR), and how long a destination may fail every attempt before it is disabled
   * (WEBHOOK_DISABLE_AFTER). Tests shorten them.
   * @default 30s,5m,30m,2h,6h; 3d; 1d
   */
  webhookRetry: { tailMs: number[]; forMs: number; disableAfterMs: number };
  /** pino level. @default info */
  logLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
  /** Human-readable logs (dev launcher). @default false */
  logPretty: boolean;
  /** A model stream with no event for this long fails its attempt (docs/architecture.md §7). @default 60 */
  modelIdleTimeoutSeconds: number;
  /**
   * How often a running reply saves its token counts when no head raise of its stream carried them
   * (activities/executionUsage.ts; docs/decisions.md "Usage"): at most what a worker crash loses of an attempt's
   * counts (USAGE_SAVE_MS). @default 500
   */
  usageSaveMs: number;
  /** Longest an execution may run, every attempt included; then it fails with a terminal error. @default 600 */
  executionDeadlineSeconds: number;
  /**
   * Admission of executions (lib/executionAdmission.ts; docs/decisions.md "Overload: admission of executions"): the
   * executions one process runs at once (EXECUTION_CONCURRENCY), the requests that may wait in line for a slot
   * (EXECUTION_QUEUE; 0: none wait) and the longest wait (EXECUTION_QUEUE_WAIT_MS); past either, 503 + Retry-After.
   * @default 20, 200, 20000
   */
  executionAdmission: { concurrency: number; queue: number; waitMs: number };
  /** Largest accepted JSON body in bytes. @default 1 MiB */
  bodyLimitBytes: number;
  /** Where `npm run dev` keeps embedded server data and the admin CLI finds their addresses. @default .data */
  dataDir: string;
  /** Deployment environment name. @default development */
  nodeEnv: string;
  /** The console's built files (scripts/lib/consoleBuild.ts), served at `/` (api/console.ts). @default console/dist */
  consoleDir: string;
  /** Root of workspace (space) files. @default <dataDir>/workspaces */
  workspacesDir: string;
  /** Largest workspace file an upload may write, in bytes (413 above). @default 100 MiB */
  workspaceFileMaxBytes: number;
  /** Most bytes one workspace may hold (413 for a write that would go over). @default 1 GiB */
  workspaceMaxBytes: number;
  /**
   * Lease of a workspace size reservation (commands/workspaceQuota.ts): renewed every third of it while a write
   * runs; a reservation left by a process that died stops counting after it [docs/decisions.md "Workspace caps
   * under concurrency"]. @default 60000
   */
  workspaceReservationLeaseMs: number;
  /**
   * Media (/api/v1/media) [docs/decisions.md "Media"]: where the files are kept (MEDIA_DIR; the api writes them,
   * the worker reads them at model-call time, so both need it) and the largest upload (MEDIA_MAX_BYTES, 413 above).
   * @default <dataDir>/media, 5 MiB
   */
  media: { dir: string; maxBytes: number };
  /**
   * Data-block queries (POST /api/workspaces/{id}/data-blocks/query) [docs/decisions.md "Data blocks"]: most rows
   * answered, longest run (interrupted after), the engine's memory, and queries running at once per api process.
   * @default 10000, 10000 ms, 256 MiB, 2
   */
  dataQuery: { maxRows: number; maxBytes: number; timeoutMs: number; memoryBytes: number; concurrency: number };
  /**
   * Dynamic client registrations (POST /oauth/register) per hour: anonymous ones per client address, those with a
   * service token per organization [docs/decisions.md
   * "Security"]. @default 20
   */
  oauthRegistrationsPerHour: number;
  /**
   * The reverse proxies whose `X-Forwarded-For` is believed (TRUST_PROXY: comma-separated addresses or CIDR ranges),
   * as CIDR ranges; a request from any other address is the socket's, its headers ignored [docs/decisions.md
   * "Client addresses behind a proxy"]. @default none
   */
  trustProxy: string[];
  /**
   * Repository clones [docs/decisions.md "Repositories"]: longest clone (git is killed after it), most bytes a
   * clone may take (also bounded by the workspace's room), and an extra CA bundle git trusts (a private CA).
   * @default 300 s, 512 MiB, none
   */
  repoClone: { timeoutSeconds: number; maxBytes: number; caInfo?: string };
  /** Check every response body against its route's schema (tests). @default false */
  validateResponses: boolean;
  /**
   * How often an api process reads the heads of its live streams when no wake-up arrives (a lost wake-up costs at
   * most this; lib/wakeups.ts). @default 1000
   */
  eventPollMs: number;
  /**
   * Longest a process keeps a cached token, agent, agent list page, default space id or webhook destination
   * (lib/sharedCache.ts): the longest a change made outside the service, or a lost invalidation, goes unseen; 0 turns
   * the caches off.
   * @default 1000
   */
  cacheTtlMs: number;
  /** Interval of the `: heartbeat` comment on every open event stream (SSE_HEARTBEAT_MS). @default 15000 */
  sseHeartbeatMs: number;
  /** Address other processes send this api's stream wake-ups to. @default HOST (the host name when HOST is a wildcard) */
  wakeupHost: string;
  /** The workflow code bundled by the launcher (WORKFLOW_BUNDLE); unset: the worker bundles it at start. */
  workflowBundlePath?: string;
  /** The git commit reported by GET /api/version (GIT_COMMIT). @default the checkout's HEAD */
  gitCommit?: string;
  /** Current surface: requests per window per identity (an identity's own limit, set by the admin CLI, wins). @default 900 */
  rateLimitRequests: number;
  /** Current surface: rate-limit window in seconds. @default 60 */
  rateLimitWindowSeconds: number;
  /**
   * USD per million tokens per model (MODEL_PRICES, a JSON object merged over lib/prices.ts's defaults): the cost of
   * each ledger entry (docs/spend.md). @default lib/prices.ts DEFAULT_MODEL_PRICES
   */
  modelPrices: PriceTable;
  /**
   * Longest a process keeps an organization's budgets and spend totals before reading them again (BUDGET_CACHE_MS;
   * its own spend is added at once): how stale another process's spend may be when a budget is checked. @default 2000
   */
  budgetCacheMs: number;
  /** Ports of the servers `npm run dev` embeds. @default 27017, 7233, 8233 */
  devPorts: { mongo: number; temporal: number; temporalUi: number };
  /**
   * Longest wait for MongoDB (server selection) or for one Temporal call before the operation fails, so that a
   * request answers 503 while a dependency is down. @default 3000
   */
  dependencyTimeoutMs: number;
  /**
   * Group commit of inserts (lib/groupCommit.ts; docs/decisions.md "Group commit of inserts"): the inserts into one
   * collection of one event-loop tick (`tick`), or of a window of 1 to 10 ms after the first, go to the server as one
   * insertMany, each caller acknowledged with its own document's outcome; 0 turns it off (GROUP_COMMIT_MS).
   * @default tick
   */
  groupCommit: GroupCommitWindow;
  /**
   * i28-lists: the one deadline of a whole request (paused while it waits on work bounded otherwise: a model reply,
   * an upload's bytes, a data query); past it the request answers 503 (lib/requestDeadline.ts). @default 4000
   */
  requestDeadlineMs: number;
  /** PATH handed to the programs the service spawns (git). @default this process's PATH */
  childPath: string;
  /**
   * The supervisor's restart policy (`npm run dev`, `npm start`): the first restart of a crashed child waits
   * `initialMs`, each further one twice as long up to `maxMs`; a child that ran `healthyMs` starts over at `initialMs`.
   * @default 500, 10000, 60000
   */
  restart: { initialMs: number; maxMs: number; healthyMs: number };
  /**
   * Worker-only processes `npm run dev` and `npm start` run beside the service process (WORKER_PROCESSES, default 0;
   * docs/decisions.md "Process roles"): the service process runs workflows itself; these add capacity.
   */
  workerProcesses: number;
  /**
   * Agent tools [docs/decisions.md "MCP server instances"]: rounds of tool calls one execution may make
   * (AGENT_MAX_TOOL_ROUNDS; calls past it get an error result and the reply ends after one more round); one MCP
   * exchange's time limit (connect, initialize, list or call: MCP_TOOL_TIMEOUT_MS); the most bytes of one MCP HTTP
   * answer read (MCP_RESPONSE_MAX_BYTES); the most bytes of a tool result given to the model and recorded
   * (MCP_TOOL_OUTPUT_MAX_BYTES); an extra CA bundle MCP connections trust, a private CA (MCP_CA_FILE). Sub-agents
   * [docs/decisions.md "Sub-agents"]: how deep delegations may nest (SUBAGENT_MAX_DEPTH: an execution at that depth
   * cannot delegate), how many sub-agents one execution may start (SUBAGENT_MAX_PER_EXECUTION).
   * @default 16, 30000, 4 MiB, 32 KiB, none, 2, 5
   */
  agentTools: {
    maxRounds: number;
    mcpTimeoutMs: number;
    mcpResponseMaxBytes: number;
    mcpOutputMaxBytes: number;
    mcpCaFile?: string;
    subAgentMaxDepth: number;
    subAgentMaxPerExecution: number;
  };
  /** Metrics, traces and the payload codec endpoint [docs/decisions.md "Observability"]. */
  observability: ObservabilityConfig;
  /**
   * Console sessions (a person signs in with a `td_` token and gets a cookie) [docs/decisions.md "Console
   * sessions"]: a session ends after `idleMs` without a request (SESSION_IDLE_TIMEOUT) and `maxAgeMs` after sign-in
   * whatever its use (SESSION_MAX_AGE); sign-in attempts are limited per client address (SESSION_SIGNIN_PER_ADDRESS)
   * and per token hint, the token's first characters (SESSION_SIGNIN_PER_TOKEN), in windows of `signInWindowSeconds`
   * (SESSION_SIGNIN_WINDOW).
   * @default 12h, 7d, 30, 10, 15m
   */
  session: {
    idleMs: number;
    maxAgeMs: number;
    signInPerAddress: number;
    signInPerToken: number;
    signInWindowSeconds: number;
  };
  /**
   * OpenID Connect identity providers (docs/identity.md): the client-library endpoints accept their ID tokens
   * (OIDC_ISSUERS), and the console offers "Sign in with SSO" through one of them (OIDC_CONSOLE_ISSUER).
   */
  oidc: OidcConfig;
}

/** An identity provider whose ID tokens are accepted. */
export interface OidcIssuer {
  /** The issuer identifier (`iss`): https, or http on a loopback host; its discovery document and JWKS are read. */
  issuer: string;
  /** The accepted audiences (`aud`: the client ids registered at the provider for this service). */
  audiences: string[];
}

/** The identity providers' settings [docs/decisions.md "Identity providers (issue 43)"]. */
export interface OidcConfig {
  /** OIDC_ISSUERS: a JSON array of `{"issuer": "...", "audience": "..." | ["...", ...]}`; empty: ID tokens are refused. */
  issuers: OidcIssuer[];
  /** OIDC_CLOCK_TOLERANCE: allowed clock skew on `exp`, `iat`, `nbf`. @default 60s */
  clockToleranceSeconds: number;
  /**
   * OIDC_JWKS_COOLDOWN: after a JWKS fetch, a token naming an unknown key is refused without fetching again for this
   * long (a rotated key is found at the first fetch after it). @default 30s
   */
  jwksCooldownMs: number;
  /**
   * The console's "Sign in with SSO" (OIDC_CONSOLE_ISSUER, one of `issuers`; OIDC_CONSOLE_CLIENT_ID, default that
   * issuer's first audience; OIDC_CONSOLE_CLIENT_SECRET, unset: a public client with PKCE only). Unset: token sign-in only.
   */
  console?: { issuer: string; clientId: string; clientSecret?: string };
}

/** Operators' settings of issue 27 (docs/operations.md "Operating it"). */
export interface ObservabilityConfig {
  /**
   * Bearer token of the codec endpoint (`POST /codec/encode|decode`, Temporal's codec server protocol;
   * TEMPORAL_CODEC_TOKEN, at least 32 characters). Unset: the endpoint answers 404.
   */
  codecToken?: string;
  /** Browser origins (the Temporal Web UI's) allowed to call the codec endpoint (TEMPORAL_CODEC_CORS_ORIGINS). */
  codecCorsOrigins: string[];
  /** Bearer token of the api's `GET /metrics` (METRICS_TOKEN, at least 16 characters); unset: 404. */
  metricsToken?: string;
  /** A worker-only process serves `GET /metrics` on HOST:METRICS_PORT (no token: do not publish it); unset: off. */
  metricsPort?: number;
  /** The Temporal SDK's Prometheus exporter on 127.0.0.1:TEMPORAL_METRICS_PORT, appended to /metrics; unset: off. */
  temporalMetricsPort?: number;
  /**
   * OpenTelemetry traces (lib/tracing.ts), from the standard variables: OTEL_TRACES_EXPORTER `otlp` or `console`
   * (unset or `none`: off; OTEL_SDK_DISABLED=true: off), OTEL_EXPORTER_OTLP_TRACES_ENDPOINT (else
   * OTEL_EXPORTER_OTLP_ENDPOINT + `/v1/traces`, else the exporter's default http://localhost:4318/v1/traces),
   * OTEL_SERVICE_NAME (default agent-automation-service).
   */
  tracing?: { exporter: 'otlp' | 'console'; endpoint?: string; serviceName: string };
}

/**
 * Retention of what grows with use [docs/decisions.md "Retention"]: each document expires this long after it was
 * written (lib/expiry.ts `retentionExpiry`); records (executions, chats, jobs, tasks, usage) stay.
 */
export interface Retention {
  /** Stream events: execution, chat, job, repository and MCP streams (STREAM_EVENT_RETENTION). @default 30d */
  streamEventsMs: number;
  /** The webhook delivery log and the service events it delivers (DELIVERY_LOG_RETENTION). @default 30d */
  deliveryLogMs: number;
}

export type { TemporalTls };

/** Locations of local tools used by the server provisioning scripts. */
export interface ToolConfig {
  temporalCliPath?: string;
  mongodPath?: string;
  /** Chromium for the browser tests (CHROMIUM_PATH). @default `chromium` on PATH */
  chromiumPath?: string;
  /** Per-user cache of built server binaries. */
  cacheDir: string;
  /** Directories of PATH, in order. */
  pathDirs: string[];
}

/** Thrown by loadConfig with every problem found. */
export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'ConfigError';
  }
}

type Env = Record<string, string | undefined>;

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

function nonEmpty(env: Env, name: string): string | undefined {
  const v = env[name];
  return v === undefined || v.trim() === '' ? undefined : v.trim();
}

/**
 * Reads and validates the configuration.
 * @param env the environment to read; defaults to process.env.
 * @returns a frozen Config.
 * @throws ConfigError listing every invalid value.
 */
export function loadConfig(env: Env = process.env): Readonly<Config> {
  const problems: string[] = [];

  const int = (name: string, def: number, min: number, max: number): number => {
    const raw = nonEmpty(env, name);
    if (raw === undefined) return def;
    const n = Number(raw);
    if (!Number.isInteger(n) || n < min || n > max) {
      problems.push(`${name}=${JSON.stringify(raw)}: must be an integer between ${min} and ${max}`);
      return def;
    }
    return n;
  };
  const bool = (name: string, def: boolean): boolean => {
    const raw = nonEmpty(env, name);
    if (raw === undefined) return def;
    if (/^(true|1|yes)$/i.test(raw)) return true;
    if (/^(false|0|no)$/i.test(raw)) return false;
    problems.push(`${name}=${JSON.stringify(raw)}: must be true or false`);
    return def;
  };
  const url = (name: string, protocols: string[]): string | undefined => {
    const raw = nonEmpty(env, name);
    if (raw === undefined) return undefined;
    try {
      const u = new URL(raw);
      if (!protocols.includes(u.protocol)) throw new Error('protocol');
      return raw.replace(/\/+$/, '');
    } catch {
      problems.push(`${name}=${JSON.stringify(raw)}: must be a ${protocols.join(' or ')} URL`);
      return undefined;
    }
  };

  const modelPrices = (): PriceTable => {
    const parsed = parseModelPrices(nonEmpty(env, 'MODEL_PRICES'));
    if ('table' in parsed) return parsed.table;
    problems.push(`MODEL_PRICES: ${parsed.error}`);
    return DEFAULT_MODEL_PRICES;
  };

  const port = int('PORT', 3000, 0, 65535);
  const host = nonEmpty(env, 'HOST') ?? '127.0.0.1';
  const appUrl = url('APP_URL', ['http:', 'https:']) ?? `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
  const mongodbUri = url('MONGODB_URI', ['mongodb:', 'mongodb+srv:']);

  const temporalAddress = nonEmpty(env, 'TEMPORAL_ADDRESS');
  if (temporalAddress !== undefined && !/^[A-Za-z0-9.\-_[\]:]+:\d{1,5}$/.test(temporalAddress)) {
    problems.push(`TEMPORAL_ADDRESS=${JSON.stringify(temporalAddress)}: must be host:port`);
  }

  const duration = (name: string, def: string, min: number, max: number): number => {
    const raw = nonEmpty(env, name) ?? def;
    const n = /^\d+$/.test(raw) ? Number.NaN : (ms(raw as ms.StringValue) as number | undefined);
    if (typeof n !== 'number' || !Number.isFinite(n) || n < min || n > max) {
      problems.push(
        `${name}=${JSON.stringify(raw)}: must be a duration from ${ms(min)} to ${ms(max)}, such as 30d or 12h`
      );
      return ms(def as ms.StringValue);
    }
    return n;
  };

  const durations = (name: string, def: string, min: number, max: number): number[] => {
    const raw = nonEmpty(env, name) ?? def;
    const parts = raw.split(',').map((p) => p.trim());
    const values = parts.map((p) => (/^\d+$/.test(p) ? Number.NaN : (ms(p as ms.StringValue) as number | undefined)));
    if (values.some((n) => typeof n !== 'number' || !Number.isFinite(n) || n < min || n > max)) {
      problems.push(
        `${name}=${JSON.stringify(raw)}: must be a comma-separated list of durations from ${ms(min)} to ${ms(max)}, such as 30s,5m,6h`
      );
      return def.split(',').map((p) => ms(p as ms.StringValue));
    }
    return values as number[];
  };

  const groupCommitSetting = (): GroupCommitWindow => {
    const raw = nonEmpty(env, 'GROUP_COMMIT_MS') ?? 'tick';
    if (raw === 'tick') return 'tick';
    const n = Number(raw);
    if (!/^\d+$/.test(raw) || n > 10) {
      problems.push(`GROUP_COMMIT_MS=${JSON.stringify(raw)}: must be tick, or an integer between 0 (off) and 10`);
      return 'tick';
    }
    return n === 0 ? 'off' : n;
  };

  const logLevelRaw = nonEmpty(env, 'LOG_LEVEL') ?? 'info';
  let logLevel: Config['logLevel'] = 'info';
  if ((LOG_LEVELS as readonly string[]).includes(logLevelRaw)) logLevel = logLevelRaw as Config['logLevel'];
  else problems.push(`LOG_LEVEL=${JSON.stringify(logLevelRaw)}: must be one of ${LOG_LEVELS.join(', ')}`);

  let encryptionKey: Buffer | undefined;
  const keyRaw = nonEmpty(env, 'ENCRYPTION_KEY');
  if (keyRaw !== undefined) {
    const key = /^[0-9a-fA-F]{64}$/.test(keyRaw) ? Buffer.from(keyRaw, 'hex') : Buffer.from(keyRaw, 'base64');
    if (key.length !== 32) problems.push('ENCRYPTION_KEY: must be 32 bytes, as 64 hex characters or base64');
    else encryptionKey = key;
  }

  const nodeEnv = nonEmpty(env, 'NODE_ENV') ?? 'development';
  if (nodeEnv === 'production' && encryptionKey === undefined && problems.every((p) => !p.startsWith('ENCRYPTION'))) {
    problems.push('ENCRYPTION_KEY: required when NODE_ENV=production');
  }

  const dataDir = path.resolve(nonEmpty(env, 'DATA_DIR') ?? '.data');
  const config: Config = {
    port,
    host,
    appUrl,
    mongodbUri,
    temporalAddress,
    temporalNamespace: nonEmpty(env, 'TEMPORAL_NAMESPACE') ?? 'default',
    temporalTaskQueue: nonEmpty(env, 'TEMPORAL_TASK_QUEUE') ?? 'agent-service',
    temporalTls: temporalTls((name) => nonEmpty(env, name), problems),
    temporalApiKey: nonEmpty(env, 'TEMPORAL_API_KEY'),
    retention: {
      streamEventsMs: duration('STREAM_EVENT_RETENTION', '30d', 1000, 3650 * 86_400_000),
      deliveryLogMs: duration('DELIVERY_LOG_RETENTION', '30d', 1000, 3650 * 86_400_000),
    },
    workerHealthFile: nonEmpty(env, 'WORKER_HEALTH_FILE') && path.resolve(nonEmpty(env, 'WORKER_HEALTH_FILE')!),
    anthropicApiKey: nonEmpty(env, 'ANTHROPIC_API_KEY'),
    anthropicBaseUrl: url('ANTHROPIC_BASE_URL', ['http:', 'https:']),
    openaiApiKey: nonEmpty(env, 'OPENAI_API_KEY'),
    openaiBaseUrl: url('OPENAI_BASE_URL', ['http:', 'https:']),
    defaultModel: nonEmpty(env, 'DEFAULT_MODEL'),
    encryptionKey,
    webhookAllowPrivate: bool('WEBHOOK_ALLOW_PRIVATE', false),
    webhookTimeoutMs: int('WEBHOOK_TIMEOUT_MS', 10_000, 100, 15_000),
    webhookRetry: {
      tailMs: durations('WEBHOOK_RETRY_TAIL', '30s,5m,30m,2h,6h', 1000, 7 * 86_400_000),
      forMs: duration('WEBHOOK_RETRY_FOR', '3d', 1000, 30 * 86_400_000),
      disableAfterMs: duration('WEBHOOK_DISABLE_AFTER', '1d', 1000, 30 * 86_400_000),
    },
    logLevel,
    logPretty: bool('LOG_PRETTY', false),
    modelIdleTimeoutSeconds: int('MODEL_IDLE_TIMEOUT_SECONDS', 60, 1, 3600),
    usageSaveMs: int('USAGE_SAVE_MS', 500, 50, 60_000),
    executionDeadlineSeconds: int('EXECUTION_DEADLINE_SECONDS', 600, 1, 86_400),
    executionAdmission: {
      concurrency: int('EXECUTION_CONCURRENCY', 20, 1, 10_000),
      queue: int('EXECUTION_QUEUE', 200, 0, 100_000),
      waitMs: int('EXECUTION_QUEUE_WAIT_MS', 20_000, 0, 600_000),
    },
    bodyLimitBytes: int('BODY_LIMIT_BYTES', 1024 * 1024, 1024, 64 * 1024 * 1024),
    dataDir,
    consoleDir: path.resolve(nonEmpty(env, 'CONSOLE_DIR') ?? path.join('console', 'dist')),
    workspacesDir: path.resolve(nonEmpty(env, 'WORKSPACES_DIR') ?? path.join(dataDir, 'workspaces')),
    workspaceFileMaxBytes: int('WORKSPACE_FILE_MAX_BYTES', 100 * 1024 * 1024, 1, Number.MAX_SAFE_INTEGER),
    workspaceMaxBytes: int('WORKSPACE_MAX_BYTES', 1024 * 1024 * 1024, 1, Number.MAX_SAFE_INTEGER),
    workspaceReservationLeaseMs: int('WORKSPACE_RESERVATION_LEASE_MS', 60_000, 1000, 3_600_000),
    media: {
      dir: path.resolve(nonEmpty(env, 'MEDIA_DIR') ?? path.join(dataDir, 'media')),
      maxBytes: int('MEDIA_MAX_BYTES', 5 * 1024 * 1024, 1, 32 * 1024 * 1024),
    },
    repoClone: {
      timeoutSeconds: int('REPO_CLONE_TIMEOUT_SECONDS', 300, 1, 3600),
      maxBytes: int('REPO_CLONE_MAX_BYTES', 512 * 1024 * 1024, 1, Number.MAX_SAFE_INTEGER),
      ...(nonEmpty(env, 'GIT_SSL_CA_INFO') ? { caInfo: path.resolve(nonEmpty(env, 'GIT_SSL_CA_INFO')!) } : {}),
    },
    dataQuery: {
      maxRows: int('DATA_QUERY_MAX_ROWS', 10000, 1, 1000000),
      maxBytes: int('DATA_QUERY_MAX_BYTES', 16 * 1024 * 1024, 1024, 512 * 1024 * 1024),
      timeoutMs: int('DATA_QUERY_TIMEOUT_MS', 10000, 10, 600000),
      memoryBytes: int('DATA_QUERY_MEMORY_BYTES', 256 * 1024 * 1024, 16 * 1024 * 1024, Number.MAX_SAFE_INTEGER),
      concurrency: int('DATA_QUERY_CONCURRENCY', 2, 1, 64),
    },
    oauthRegistrationsPerHour: int('OAUTH_REGISTRATIONS_PER_HOUR', 20, 1, 100_000),
    trustProxy: proxyRanges(nonEmpty(env, 'TRUST_PROXY'), problems),
    validateResponses: bool('VALIDATE_RESPONSES', false),
    eventPollMs: int('EVENT_POLL_MS', 1000, 10, 60_000),
    cacheTtlMs: int('CACHE_TTL_MS', 1000, 0, 60_000),
    sseHeartbeatMs: int('SSE_HEARTBEAT_MS', 15_000, 50, 600_000),
    gitCommit: nonEmpty(env, 'GIT_COMMIT'),
    workflowBundlePath: nonEmpty(env, 'WORKFLOW_BUNDLE'),
    wakeupHost: nonEmpty(env, 'WAKEUP_HOST') ?? (['0.0.0.0', '::'].includes(host) ? os.hostname() : host),
    rateLimitRequests: int('RATE_LIMIT_REQUESTS', 900, 1, 1_000_000),
    rateLimitWindowSeconds: int('RATE_LIMIT_WINDOW_SECONDS', 60, 1, 86_400),
    modelPrices: modelPrices(),
    budgetCacheMs: int('BUDGET_CACHE_MS', 2000, 0, 60_000),
    nodeEnv,
    devPorts: {
      mongo: int('DEV_MONGO_PORT', 27017, 1, 65535),
      temporal: int('DEV_TEMPORAL_PORT', 7233, 1, 65535),
      temporalUi: int('DEV_TEMPORAL_UI_PORT', 8233, 1, 65535),
    },
    dependencyTimeoutMs: int('DEPENDENCY_TIMEOUT_MS', 3000, 100, 60_000),
    groupCommit: groupCommitSetting(),
    requestDeadlineMs: int('REQUEST_DEADLINE_MS', 4000, 100, 600_000),
    childPath: env.PATH ?? '/usr/local/bin:/usr/bin:/bin',
    workerProcesses: int('WORKER_PROCESSES', 0, 0, 16),
    restart: {
      initialMs: int('RESTART_BACKOFF_MS', 500, 10, 60_000),
      maxMs: int('RESTART_BACKOFF_MAX_MS', 10_000, 10, 600_000),
      healthyMs: int('RESTART_HEALTHY_MS', 60_000, 100, 3_600_000),
    },
    agentTools: {
      maxRounds: int('AGENT_MAX_TOOL_ROUNDS', 16, 1, 100),
      mcpTimeoutMs: int('MCP_TOOL_TIMEOUT_MS', 30_000, 100, 300_000),
      mcpResponseMaxBytes: int('MCP_RESPONSE_MAX_BYTES', 4 * 1024 * 1024, 1024, 64 * 1024 * 1024),
      mcpOutputMaxBytes: int('MCP_TOOL_OUTPUT_MAX_BYTES', 32 * 1024, 256, 1024 * 1024),
      ...(nonEmpty(env, 'MCP_CA_FILE') ? { mcpCaFile: path.resolve(nonEmpty(env, 'MCP_CA_FILE')!) } : {}),
      subAgentMaxDepth: int('SUBAGENT_MAX_DEPTH', 2, 1, 5),
      subAgentMaxPerExecution: int('SUBAGENT_MAX_PER_EXECUTION', 5, 1, 50),
    },
    observability: { codecCorsOrigins: [] },
    session: {
      idleMs: duration('SESSION_IDLE_TIMEOUT', '12h', 1000, 30 * 86_400_000),
      maxAgeMs: duration('SESSION_MAX_AGE', '7d', 1000, 365 * 86_400_000),
      signInPerAddress: int('SESSION_SIGNIN_PER_ADDRESS', 30, 1, 1_000_000),
      signInPerToken: int('SESSION_SIGNIN_PER_TOKEN', 10, 1, 1_000_000),
      signInWindowSeconds: Math.round(duration('SESSION_SIGNIN_WINDOW', '15m', 1000, 86_400_000) / 1000),
    },
    oidc: { issuers: [], clockToleranceSeconds: 60, jwksCooldownMs: 30_000 },
  };
  config.observability = observabilityConfig(env, config, problems);
  config.oidc = oidcConfig(env, problems, duration);
  if (config.restart.maxMs < config.restart.initialMs) {
    problems.push(
      `RESTART_BACKOFF_MAX_MS=${config.restart.maxMs}: must be at least RESTART_BACKOFF_MS (${config.restart.initialMs})`
    );
  }

  if (problems.length > 0) throw new ConfigError(problems);
  return Object.freeze(config);
}

/**
 * The observability block (issue 27): codec endpoint, metrics, traces.
 * @param env the environment.
 * @param config the rest of the configuration (ports).
 * @param problems where problems are added.
 * @returns the block.
 */
function observabilityConfig(env: Env, config: Config, problems: string[]): ObservabilityConfig {
  const codecToken = nonEmpty(env, 'TEMPORAL_CODEC_TOKEN');
  if (codecToken !== undefined && codecToken.length < 32)
    problems.push('TEMPORAL_CODEC_TOKEN: must be at least 32 characters (a random secret)');
  const ui = config.devPorts.temporalUi;
  const origins = (
    nonEmpty(env, 'TEMPORAL_CODEC_CORS_ORIGINS') ??
    `http://127.0.0.1:${ui},http://localhost:${ui},http://127.0.0.1:8080,http://localhost:8080`
  )
    .split(',')
    .map((o) => o.trim())
    .filter(Boolean);
  for (const o of origins) {
    if (!/^https?:\/\/[^/\s]+$/.test(o))
      problems.push(`TEMPORAL_CODEC_CORS_ORIGINS: ${JSON.stringify(o)} is not an origin (scheme://host[:port])`);
  }
  const metricsToken = nonEmpty(env, 'METRICS_TOKEN');
  if (metricsToken !== undefined && metricsToken.length < 16)
    problems.push('METRICS_TOKEN: must be at least 16 characters (a random secret)');
  const port = (name: string): number | undefined => {
    const raw = nonEmpty(env, name);
    if (raw === undefined) return undefined;
    const n = Number(raw);
    if (Number.isInteger(n) && n >= 0 && n <= 65535) return n;
    problems.push(`${name}=${JSON.stringify(raw)}: must be a port (0 to 65535)`);
    return undefined;
  };
  const metricsPort = port('METRICS_PORT');
  const exporter = nonEmpty(env, 'OTEL_TRACES_EXPORTER') ?? 'none';
  if (!['otlp', 'console', 'none'].includes(exporter))
    problems.push(`OTEL_TRACES_EXPORTER=${JSON.stringify(exporter)}: must be otlp, console or none`);
  const base = nonEmpty(env, 'OTEL_EXPORTER_OTLP_ENDPOINT');
  const endpoint =
    nonEmpty(env, 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT') ?? (base && `${base.replace(/\/+$/, '')}/v1/traces`);
  const tracingOn =
    (exporter === 'otlp' || exporter === 'console') && !/^true$/i.test(nonEmpty(env, 'OTEL_SDK_DISABLED') ?? '');
  const temporalMetricsPort = port('TEMPORAL_METRICS_PORT');
  return {
    ...(codecToken && codecToken.length >= 32 ? { codecToken } : {}),
    codecCorsOrigins: origins,
    ...(metricsToken && metricsToken.length >= 16 ? { metricsToken } : {}),
    ...(metricsPort !== undefined ? { metricsPort } : {}),
    ...(temporalMetricsPort ? { temporalMetricsPort } : {}),
    ...(tracingOn
      ? {
          tracing: {
            exporter: exporter as 'otlp' | 'console',
            ...(endpoint ? { endpoint } : {}),
            serviceName: nonEmpty(env, 'OTEL_SERVICE_NAME') ?? 'agent-automation-service',
          },
        }
      : {}),
  };
}

/** An issuer may be https anywhere, or http on a loopback host only (a provider on the same machine, tests). */
function acceptableIssuer(value: string): boolean {
  try {
    const u = new URL(value);
    if (u.search !== '' || u.hash !== '' || u.username !== '' || u.password !== '') return false;
    if (u.protocol === 'https:') return true;
    return u.protocol === 'http:' && isLoopbackHostname(u.hostname);
  } catch {
    return false;
  }
}

/**
 * The identity providers' block (issue 43).
 * @param env the environment.
 * @param problems where problems are added.
 * @param duration the duration reader of loadConfig.
 * @returns the block.
 */
function oidcConfig(
  env: Env,
  problems: string[],
  duration: (name: string, def: string, min: number, max: number) => number
): OidcConfig {
  const issuers: OidcIssuer[] = [];
  const raw = nonEmpty(env, 'OIDC_ISSUERS');
  if (raw !== undefined) {
    const bad = (why: string): void => {
      problems.push(`OIDC_ISSUERS: ${why} (a JSON array of {"issuer": "https://...", "audience": "<client id>"})`);
    };
    let parsed: unknown;
    try {
      parsed = JSON.parse(raw);
    } catch {
      parsed = undefined;
    }
    if (!Array.isArray(parsed)) bad('not a JSON array');
    else
      for (const entry of parsed as unknown[]) {
        const e = (entry ?? {}) as { issuer?: unknown; audience?: unknown };
        const audiences = typeof e.audience === 'string' ? [e.audience] : e.audience;
        if (typeof e.issuer !== 'string' || !acceptableIssuer(e.issuer)) {
          bad(`${JSON.stringify(e.issuer)} is not an issuer URL (https, or http on a loopback host; no query)`);
        } else if (
          !Array.isArray(audiences) ||
          audiences.length === 0 ||
          audiences.some((a) => typeof a !== 'string' || a.trim() === '')
        ) {
          bad(`issuer ${e.issuer} needs an audience (a non-empty string or array of strings)`);
        } else if (issuers.some((i) => i.issuer === e.issuer)) {
          bad(`issuer ${e.issuer} is listed twice`);
        } else issuers.push({ issuer: e.issuer, audiences: audiences as string[] });
      }
  }
  const consoleIssuer = nonEmpty(env, 'OIDC_CONSOLE_ISSUER');
  const consoleClientId = nonEmpty(env, 'OIDC_CONSOLE_CLIENT_ID');
  const clientSecret = nonEmpty(env, 'OIDC_CONSOLE_CLIENT_SECRET');
  let consoleSso: OidcConfig['console'];
  if (consoleIssuer !== undefined) {
    const issuer = issuers.find((i) => i.issuer === consoleIssuer);
    if (!issuer)
      problems.push(`OIDC_CONSOLE_ISSUER=${JSON.stringify(consoleIssuer)}: must be an issuer of OIDC_ISSUERS`);
    else {
      const clientId = consoleClientId ?? issuer.audiences[0];
      if (!issuer.audiences.includes(clientId))
        problems.push(`OIDC_CONSOLE_CLIENT_ID=${JSON.stringify(clientId)}: must be an audience of ${issuer.issuer}`);
      consoleSso = { issuer: issuer.issuer, clientId, ...(clientSecret ? { clientSecret } : {}) };
    }
  }
  return {
    issuers,
    clockToleranceSeconds: Math.round(duration('OIDC_CLOCK_TOLERANCE', '60s', 0, 600_000) / 1000),
    jwksCooldownMs: duration('OIDC_JWKS_COOLDOWN', '30s', 0, 3_600_000),
    ...(consoleSso ? { console: consoleSso } : {}),
  };
}

/**
 * Loads the configuration or, when invalid, prints one line per problem to stderr and exits 1.
 * @param env the environment to read; defaults to process.env.
 * @returns the frozen Config.
 */
export function loadConfigOrExit(env: Env = process.env): Readonly<Config> {
  try {
    return loadConfig(env);
  } catch (err) {
    if (err instanceof ConfigError) {
      for (const p of err.problems) process.stderr.write(`config error: ${p}\n`);
      process.exit(1);
    }
    throw err;
  }
}

/**
 * Reads the locations used by server provisioning (scripts only).
 * @param env the environment to read; defaults to process.env.
 * @returns the tool configuration.
 */
export function loadToolConfig(env: Env = process.env): ToolConfig {
  const cacheRoot = nonEmpty(env, 'XDG_CACHE_HOME') ?? path.join(os.homedir(), '.cache');
  return {
    temporalCliPath: nonEmpty(env, 'TEMPORAL_CLI_PATH'),
    mongodPath: nonEmpty(env, 'MONGOD_PATH'),
    chromiumPath: nonEmpty(env, 'CHROMIUM_PATH'),
    cacheDir: path.join(cacheRoot, 'agent-automation-service'),
    pathDirs: (env.PATH ?? '').split(path.delimiter).filter(Boolean),
  };
}

/**
 * The environment a launcher passes to the processes it starts (the dev launcher and `npm start`).
 * @param overrides variables to set on top of the current environment.
 * @returns a new environment object.
 */
export function childEnv(overrides: Env): NodeJS.ProcessEnv {
  return { ...process.env, ...overrides };
}

/**
 * @param raw TRUST_PROXY: comma-separated IP addresses or CIDR ranges.
 * @param problems where an invalid entry is reported.
 * @returns the ranges as CIDR (`10.0.0.1/32`).
 */
function proxyRanges(raw: string | undefined, problems: string[]): string[] {
  if (raw === undefined) return [];
  const ranges: string[] = [];
  for (const part of raw.split(',').map((p) => p.trim())) {
    try {
      const [ip, bits] = part.includes('/')
        ? ipaddr.parseCIDR(part)
        : [ipaddr.parse(part), ipaddr.parse(part).kind() === 'ipv4' ? 32 : 128];
      ranges.push(`${ip.toString()}/${bits}`);
    } catch {
      problems.push(`TRUST_PROXY=${JSON.stringify(raw)}: must be comma-separated IP addresses or CIDR ranges`);
      return [];
    }
  }
  return ranges;
}
