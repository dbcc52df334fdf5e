/**
 * One webhook HTTP attempt: POST the raw JSON body to a safe destination (lib/safeDestination.ts: https only, the
 * connect-time DNS check), never following redirects, within a timeout, reading at most a capped part of the
 * answer, and classify the outcome (SPEC "Webhook delivery", docs/decisions.md "Webhook delivery"):
 * 2xx delivered; network error, timeout, 408, 429 and 5xx transient; any other status (3xx, 4xx) and a refused
 * destination permanent.
 */
import https from 'node:https';
import { assertSafeUrl, safeLookup, UnsafeDestinationError, type Resolver } from './safeDestination';
import { traceWebhookSend } from './tracing';
import { requestIdHeaders } from './requestContext';

export type AttemptOutcome = 'delivered' | 'transient' | 'permanent';

export interface SendInput {
  url: string;
  body: string;
  headers: Record<string, string>;
  allowPrivate: boolean;
  timeoutMs: number;
  /** The most of the answer's body that is read; the connection is closed there. */
  maxResponseBytes: number;
  /** The first bytes of the answer's body returned as `response`. */
  excerptBytes: number;
  /** Injectable resolver (tests). */
  resolver?: Resolver;
}

export interface SendResult {
  outcome: AttemptOutcome;
  /** The receiver's HTTP status; null when none came. */
  status: number | null;
  latencyMs: number;
  /** Why the attempt did not deliver, in the service's words; null when delivered. */
  error: string | null;
  /** The receiver's `Retry-After`, in seconds, when it sent one (seconds or an HTTP date). */
  retryAfterSeconds: number | null;
  /** The first `excerptBytes` of the answer's body, as UTF-8 text; null when no answer came. */
  response: string | null;
  /** Why the destination was refused, for the log only (`error` holds the client's one message). */
  detail?: string;
}

/**
 * Connections are kept alive and reused per destination (no TLS handshake per delivery in a burst). Every new
 * connection goes through the connect-time DNS check (the `lookup` passed with each request); a reused one was
 * checked when it was opened.
 */
const agents = new Map<string, https.Agent>();
function agentFor(allowPrivate: boolean): https.Agent {
  const key = String(allowPrivate);
  let agent = agents.get(key);
  if (!agent) {
    agent = new https.Agent({
      keepAlive: true,
      keepAliveMsecs: 1000,
      maxSockets: 64,
      maxFreeSockets: 16,
      timeout: 30_000,
    });
    agents.set(key, agent);
  }
  return agent;
}

/**
 * @param status an HTTP status.
 * @returns how an answer with it is treated.
 */
export function classifyStatus(status: number): AttemptOutcome {
  if (status >= 200 && status < 300) return 'delivered';
  if (status === 408 || status === 429 || status >= 500) return 'transient';
  return 'permanent';
}

/**
 * @param value a `Retry-After` header.
 * @param now the current time (ms).
 * @returns seconds to wait, or null when absent or unreadable.
 */
export function parseRetryAfter(value: string | undefined, now = Date.now()): number | null {
  if (value === undefined || value.trim() === '') return null;
  if (/^\d+$/.test(value.trim())) return Number(value.trim());
  const date = Date.parse(value);
  if (Number.isNaN(date)) return null;
  return Math.max(0, Math.ceil((date - now) / 1000));
}

/**
 * Sends one attempt, in its own span (lib/tracing.ts `traceWebhookSend`); never throws.
 * @param input destination, body, headers and limits.
 * @returns the outcome.
 */
export async function sendWebhook(input: SendInput): Promise<SendResult> {
  let url: URL | undefined;
  try {
    url = new URL(input.url);
  } catch {
    url = undefined; // refused below, still traced
  }
  const attempt = Number(input.headers['Service-Delivery-Attempt']);
  return traceWebhookSend(
    {
      url,
      eventId: input.headers['Service-Event-Id'],
      eventType: input.headers['Service-Event-Type'],
      ...(Number.isInteger(attempt) && attempt > 0 ? { attempt } : {}),
    },
    () => attemptDelivery(input)
  );
}

async function attemptDelivery(input: SendInput): Promise<SendResult> {
  const started = performance.now();
  type Outcome = Omit<SendResult, 'latencyMs' | 'response'> & Partial<Pick<SendResult, 'response'>>;
  const done = (r: Outcome): SendResult => ({
    response: null,
    ...r,
    latencyMs: Math.round(performance.now() - started),
  });
  let url: URL;
  try {
    url = assertSafeUrl(input.url, { allowPrivate: input.allowPrivate });
  } catch (err) {
    return done({ outcome: 'permanent', status: null, error: (err as Error).message, retryAfterSeconds: null });
  }
  return new Promise<SendResult>((resolve) => {
    let settled = false;
    const finish = (r: Outcome): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(done(r));
    };
    const req = https.request(url, {
      method: 'POST',
      headers: {
        ...requestIdHeaders(),
        ...input.headers,
        'content-type': 'application/json',
        'content-length': String(Buffer.byteLength(input.body)),
        'user-agent': 'agent-automation-service-webhooks',
      },
      lookup: safeLookup({ allowPrivate: input.allowPrivate, resolver: input.resolver }) as never,
      agent: input.resolver ? false : agentFor(input.allowPrivate), // an injected resolver gets its own connection
    });
    const timer = setTimeout(() => {
      req.destroy();
      finish({
        outcome: 'transient',
        status: null,
        error: `No answer within ${input.timeoutMs} ms`,
        retryAfterSeconds: null,
      });
    }, input.timeoutMs);
    req.on('error', (err) => {
      if (err instanceof UnsafeDestinationError)
        finish({ outcome: 'permanent', status: null, error: err.message, retryAfterSeconds: null, detail: err.detail });
      else
        finish({
          outcome: 'transient',
          status: null,
          error: `Network error: ${(err as NodeJS.ErrnoException).code ?? err.message}`,
          retryAfterSeconds: null,
        });
    });
    req.on('response', (res) => {
      const status = res.statusCode ?? 0;
      const kept: Buffer[] = [];
      let keptBytes = 0;
      let read = 0;
      const end = (): void => {
        const outcome = classifyStatus(status);
        const header = res.headers['retry-after'];
        finish({
          outcome,
          status,
          error: outcome === 'delivered' ? null : `The receiver answered ${status}`,
          retryAfterSeconds: parseRetryAfter(Array.isArray(header) ? header[0] : header),
          response: Buffer.concat(kept).toString('utf8'),
        });
      };
      res.on('data', (chunk: Buffer) => {
        if (settled) return;
        // Only the part of a chunk within the cap is read; the rest is dropped with the connection.
        const part = chunk.subarray(0, input.maxResponseBytes - read);
        read += part.length;
        if (keptBytes < input.excerptBytes) {
          const excerpt = part.subarray(0, input.excerptBytes - keptBytes);
          kept.push(Buffer.from(excerpt)); // a copy: the chunk itself is not retained
          keptBytes += excerpt.length;
        }
        if (read >= input.maxResponseBytes) {
          end();
          res.destroy(); // the rest of a large answer is never read
        }
      });
      res.on('end', end);
      res.on('error', end);
      res.on('close', end);
    });
    req.end(input.body);
  });
}
