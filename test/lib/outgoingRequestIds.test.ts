/**
 * The request id follows the work out of the service (docs/architecture.md §7): a model provider call and an MCP
 * exchange made for a request carry its `x-request-id`, and carry none outside one. Real SDKs and the real MCP fetch
 * against servers on loopback that record the headers they receive. (Webhook attempts add it the same way,
 * lib/webhookSender.ts; their sender trusts only the system's CAs, so no loopback receiver can be reached here.)
 */
import { mkdtempSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { safeFetch } from '../../lib/mcpClient';
import { createAnthropicProvider } from '../../lib/providers/anthropic';
import { createOpenAIProvider } from '../../lib/providers/openai';
import type { ModelProvider } from '../../lib/providers/types';
import { runWithRequestId } from '../../lib/requestContext';
import { loopbackCertificate } from '../../scripts/fakes/certificate';

/** Headers of every request received; each is answered 400 with a JSON error (the call fails, after it was sent). */
const seen: http.IncomingHttpHeaders[] = [];
const handler: http.RequestListener = (req, res) => {
  seen.push(req.headers);
  req.resume();
  req.on('end', () => {
    res.writeHead(400, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ type: 'error', error: { type: 'invalid_request_error', message: 'recorded' } }));
  });
};
const plain = http.createServer(handler);
const cert = loopbackCertificate(mkdtempSync(path.join(os.tmpdir(), 'reqid-')));
const secure = https.createServer({ key: cert.key, cert: cert.cert }, handler);
const urlOf = (server: http.Server, scheme: string): string =>
  `${scheme}://127.0.0.1:${(server.address() as AddressInfo).port}`;

beforeAll(async () => {
  await new Promise<void>((r) => plain.listen(0, '127.0.0.1', r));
  await new Promise<void>((r) => secure.listen(0, '127.0.0.1', r));
});
afterAll(async () => {
  await new Promise((r) => plain.close(r));
  await new Promise((r) => secure.close(r));
});
beforeEach(() => void seen.splice(0));

/** Runs one model call to its end (it fails: the server answers 400). */
async function call(provider: ModelProvider): Promise<void> {
  const events = provider.stream({
    model: 'm',
    system: '',
    messages: [{ role: 'user', content: 'hi' }],
    maxTokens: 10,
    signal: new AbortController().signal,
  });
  await expect(
    (async () => {
      for await (const _ of events) void _;
    })()
  ).rejects.toThrow();
}

describe.each([
  ['Anthropic', () => createAnthropicProvider({ apiKey: 'k', baseURL: urlOf(plain, 'http') })],
  ['OpenAI-compatible', () => createOpenAIProvider({ apiKey: 'k', baseURL: `${urlOf(plain, 'http')}/v1` })],
] as const)('%s provider', (_name, make) => {
  it("sends the work's request id, and none outside a request", async () => {
    await runWithRequestId('req-model-1', () => call(make()));
    await call(make());
    expect(seen.map((h) => h['x-request-id'])).toEqual(['req-model-1', undefined]);
  });
});

it("an MCP exchange carries the work's request id", async () => {
  const fetchMcp = safeFetch({ allowPrivate: true, timeoutMs: 5000, maxResponseBytes: 1024, caFile: cert.certFile });
  const post = (): Promise<Response> =>
    fetchMcp(`${urlOf(secure, 'https')}/mcp`, { method: 'POST', body: '{}', headers: { accept: 'application/json' } });
  expect((await runWithRequestId('req-mcp-1', post)).status).toBe(400);
  expect((await post()).status).toBe(400);
  expect(seen.map((h) => h['x-request-id'])).toEqual(['req-mcp-1', undefined]);
});
