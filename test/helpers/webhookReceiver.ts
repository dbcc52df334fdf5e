/**
 * A real HTTPS webhook receiver on loopback for the delivery tests: a self-signed certificate made with openssl
 * (trusted by the worker under test through NODE_EXTRA_CA_CERTS), every request recorded with its raw body, and a
 * per-event plan of answers (e.g. 503, 503, 200) so tests drive retries.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';

export interface ReceivedDelivery {
  headers: Record<string, string>;
  body: string;
  /** The status this receiver answered. */
  answered: number;
  /** When it arrived (ms, this process's clock). */
  at: number;
}

export interface Answer {
  status: number;
  headers?: Record<string, string>;
}

export interface WebhookReceiver {
  url: string;
  /** PEM file of the certificate (NODE_EXTRA_CA_CERTS for the worker). */
  caFile: string;
  received: ReceivedDelivery[];
  /** Answers for one event id, in order (then 200). */
  plan(eventId: string, answers: Array<number | Answer>): void;
  /** Deliveries of one event id. */
  of(eventId: string): ReceivedDelivery[];
  /** Resolves once `count` deliveries of the event arrived. */
  waitFor(eventId: string, count: number, timeoutMs?: number): Promise<ReceivedDelivery[]>;
  close(): Promise<void>;
}

/** @returns a started receiver on 127.0.0.1 with a fresh self-signed certificate for 127.0.0.1 and localhost. */
export async function startWebhookReceiver(): Promise<WebhookReceiver> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'webhook-receiver-'));
  const keyFile = path.join(dir, 'key.pem');
  const caFile = path.join(dir, 'cert.pem');
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-keyout',
      keyFile,
      '-out',
      caFile,
      '-days',
      '1',
      '-subj',
      '/CN=127.0.0.1',
      '-addext',
      'subjectAltName=IP:127.0.0.1,DNS:localhost',
    ],
    { stdio: 'ignore' }
  );
  const received: ReceivedDelivery[] = [];
  const plans = new Map<string, Array<number | Answer>>();
  const server = https.createServer({ key: readFileSync(keyFile), cert: readFileSync(caFile) }, (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const headers: Record<string, string> = {};
      for (const [k, v] of Object.entries(req.headers)) headers[k] = Array.isArray(v) ? v.join(', ') : (v ?? '');
      const eventId = headers['service-event-id'] ?? '';
      const next = plans.get(eventId)?.shift() ?? 200;
      const answer: Answer = typeof next === 'number' ? { status: next } : next;
      received.push({ headers, body: Buffer.concat(chunks).toString('utf8'), answered: answer.status, at: Date.now() });
      res.writeHead(answer.status, answer.headers ?? {});
      res.end('ok');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const of = (eventId: string): ReceivedDelivery[] => received.filter((r) => r.headers['service-event-id'] === eventId);
  return {
    url: `https://127.0.0.1:${port}/hooks`,
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
    close: async () => {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
