/**
 * One webhook HTTP attempt: POST the raw JSON body to a safe destination (lib/safeDestination.ts: https only, the
 * connect-time DNS check), never following redirects, within a timeout, reading at most a capped part of the
 * answer, and classify the outcome (SPEC "Webhook delivery", docs/decisions.md "Webhook delivery"):
 * 2xx delivered; network error, timeout, 408, 429 and 5xx transient; any other status (3xx, 4xx) and a refused
 * destination permanent.
 */
import https from 'node:https';
import { assertSafeUrl, safeLookup, UnsafeDestinationError, type Resolver } from './safeDestination';

export type AttemptOutcome = 'delivered' | 'transient' | 'permanent';

export interface SendInput {
  url: string;
  body: string;
  headers: Record<string, string>;
  allowPrivate: boolean;
  timeoutMs: number;
  maxResponseBytes: number;
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
 * Sends one attempt; never throws.
 * @param input destination, body, headers and limits.
 * @returns the outcome.
 */
export async function sendWebhook(input: SendInput): Promise<SendResult> {
  const started = performance.now();
  const done = (r: Omit<SendResult, 'latencyMs'>): SendResult => ({
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
    const finish = (r: Omit<SendResult, 'latencyMs'>): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(done(r));
    };
    const req = https.request(url, {
      method: 'POST',
      headers: {
        ...input.headers,
        'content-type': 'application/json',
        'content-length': String(Buffer.byteLength(input.body)),
        'user-agent': 'agent-automation-service-webhooks',
      },
      lookup: safeLookup({ allowPrivate: input.allowPrivate, resolver: input.resolver }) as never,
      agent: false, // one connection per attempt: the DNS check runs for each one
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
        finish({ outcome: 'permanent', status: null, error: err.message, retryAfterSeconds: null });
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
      let read = 0;
      const end = (): void => {
        const outcome = classifyStatus(status);
        const header = res.headers['retry-after'];
        finish({
          outcome,
          status,
          error: outcome === 'delivered' ? null : `The receiver answered ${status}`,
          retryAfterSeconds: parseRetryAfter(Array.isArray(header) ? header[0] : header),
        });
      };
      res.on('data', (chunk: Buffer) => {
        read += chunk.length;
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
