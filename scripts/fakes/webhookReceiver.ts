/**
 * A real HTTPS webhook receiver on loopback for the delivery tests and the webhook benchmark: a self-signed
 * certificate made with openssl (trusted by the worker under test through NODE_EXTRA_CA_CERTS), every request
 * recorded with its raw body, and a per-event plan of answers (e.g. 503, 503, 200; a large or endless body; no
 * answer at all) so tests drive retries, timeouts and the read cap.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import type { ServerResponse } from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { loopbackCertificate } from './certificate';

export interface ReceivedDelivery {
  headers: Record<string, string>;
  body: string;
  /** The status this receiver answered; null when it never answered (a `hang` plan). */
  answered: number | null;
  /** Whether the whole answer was handed to the connection (false until then, and when the client hung up first). */
  answerComplete: boolean;
  /** When it arrived (ms, this process's clock). */
  at: number;
}

export interface Answer {
  status: number;
  headers?: Record<string, string>;
  /** The body: `ok` by default; a number: that many bytes (`x`); `endless`: bytes until the client hangs up. */
  body?: number | 'endless';
}

/** A planned answer: a status, an answer, or `hang` (the request is read and never answered). */
export type Planned = number | Answer | 'hang';

export interface WebhookReceiver {
  url: string;
  /** PEM file of the certificate (NODE_EXTRA_CA_CERTS for the worker). */
  caFile: string;
  received: ReceivedDelivery[];
  /** Answers for one event id, in order (then 200). */
  plan(eventId: string, answers: Planned[]): void;
  /** Deliveries of one event id. */
  of(eventId: string): ReceivedDelivery[];
  /** Resolves once `count` deliveries of the event arrived. */
  waitFor(eventId: string, count: number, timeoutMs?: number): Promise<ReceivedDelivery[]>;
  /** Goes down: stops listening and drops every connection (a connection attempt is refused) until `up()`. */
  down(): Promise<void>;
  /** Listens again on the same port. */
  up(): Promise<void>;
  close(): Promise<void>;
}

const FILL = Buffer.alloc(64 * 1024, 'x');

/**
 * Writes `total` bytes (Infinity: until the client hangs up), honouring back-pressure, without holding them.
 * @param res the answer.
 * @param total how many bytes.
 */
function writeBytes(res: ServerResponse, total: number): void {
  let sent = 0;
  const pump = (): void => {
    while (!res.destroyed && sent < total) {
      const n = Math.min(FILL.length, total - sent);
      sent += n;
      if (!res.write(n === FILL.length ? FILL : FILL.subarray(0, n))) {
        res.once('drain', pump);
        return;
      }
    }
    if (!res.destroyed) res.end();
  };
  pump();
}

/**
 * @param host the address it listens on (default loopback; the multi-host test bed gives its bridge address).
 * @returns a started receiver with a fresh self-signed certificate for that address, 127.0.0.1 and localhost.
 */
export async function startWebhookReceiver(host = '127.0.0.1'): Promise<WebhookReceiver> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'webhook-receiver-'));
  const { certFile: caFile, key, cert } = loopbackCertificate(dir, host === '127.0.0.1' ? undefined : host);
  const received: ReceivedDelivery[] = [];
  const plans = new Map<string, Planned[]>();
  const server = https.createServer({ key, cert }, (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const headers: Record<string, string> = {};
      for (const [k, v] of Object.entries(req.headers)) headers[k] = Array.isArray(v) ? v.join(', ') : (v ?? '');
      const eventId = headers['service-event-id'] ?? '';
      const next = plans.get(eventId)?.shift() ?? 200;
      const body = Buffer.concat(chunks).toString('utf8');
      const at = Date.now();
      if (next === 'hang') {
        received.push({ headers, body, answered: null, answerComplete: false, at });
        return; // the request stays open until the client gives up
      }
      const answer: Answer = typeof next === 'number' ? { status: next } : next;
      const entry: ReceivedDelivery = { headers, body, answered: answer.status, answerComplete: false, at };
      received.push(entry);
      res.on('finish', () => (entry.answerComplete = true));
      res.on('error', () => undefined); // a client that hangs up mid-answer
      res.writeHead(answer.status, answer.headers ?? {});
      if (answer.body === undefined) res.end('ok');
      else writeBytes(res, answer.body === 'endless' ? Infinity : answer.body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  const { port } = server.address() as AddressInfo;
  let listening = true;
  const stop = async (): Promise<void> => {
    if (!listening) return;
    listening = false;
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  };
  const of = (eventId: string): ReceivedDelivery[] => received.filter((r) => r.headers['service-event-id'] === eventId);
  return {
    url: `https://${host}:${port}/hooks`,
    caFile,
    received,
    plan: (eventId, answers) => plans.set(eventId, [...answers]),
    of,
    waitFor: async (eventId, count, timeoutMs = 30_000) => {
      const deadline = Date.now() + timeoutMs;
      while (of(eventId).length < count) {
        if (Date.now() > deadline)
          throw new Error(`timed out waiting for ${count} deliveries of ${eventId} (got ${of(eventId).length})`);
        await new Promise((r) => setTimeout(r, 50));
      }
      return of(eventId);
    },
    down: stop,
    up: async () => {
      if (listening) return;
      await new Promise<void>((resolve) => server.listen(port, host, resolve));
      listening = true;
    },
    close: async () => {
      await stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
