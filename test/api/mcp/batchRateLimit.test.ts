/**
 * Every JSON-RPC message of an MCP batch counts against the rate limit (issue 30 point 3): a batch of n messages
 * is n requests of the caller's budget, so batching cannot multiply it (tool calls such as `execute_agent` included).
 */
import { buildOrg, bearer } from '../../helpers/factories';
import { useTestApp } from '../../helpers/app';
import { useTestDatabase } from '../../helpers/mongo';

useTestDatabase();
/** A small budget in a long window, so that no window boundary falls inside the test (a 30 s margin below). */
const t = useTestApp({ RATE_LIMIT_REQUESTS: '10', RATE_LIMIT_WINDOW_SECONDS: '3600' });

const post = (token: string, body: object, session?: string) => {
  const req = t.request
    .post('/mcp')
    .set('Authorization', bearer(token))
    .set('Accept', 'application/json, text/event-stream')
    .set('Content-Type', 'application/json');
  return (session ? req.set('Mcp-Session-Id', session) : req).send(body);
};
const pings = (n: number, from: number): object[] =>
  Array.from({ length: n }, (_, i) => ({ jsonrpc: '2.0', id: from + i, method: 'ping' }));

it('a batch of n messages takes n requests of the budget; a batch past it is 429 as a whole', async () => {
  const left = 3_600_000 - (Date.now() % 3_600_000);
  if (left < 30_000) await new Promise((r) => setTimeout(r, left + 50));
  const org = await buildOrg();
  const init = await post(org.serviceToken, {
    jsonrpc: '2.0',
    id: 0,
    method: 'initialize',
    params: { protocolVersion: '2025-03-26', capabilities: {}, clientInfo: { name: 'batch', version: '1' } },
  });
  expect(init.status).toBe(200);
  expect(init.headers['x-ratelimit-remaining']).toBe('9');
  const session = init.headers['mcp-session-id'] as string;
  expect(session).toBeTruthy();

  const batch = await post(org.serviceToken, pings(4, 1), session);
  expect(batch.status).toBe(200);
  expect(batch.headers['x-ratelimit-remaining']).toBe('5');
  for (let id = 1; id <= 4; id++) expect(batch.text).toContain(`"id":${id}`);

  const over = await post(org.serviceToken, pings(6, 10), session);
  expect(over.status).toBe(429);
  expect(over.headers['retry-after']).toBeDefined();
  expect(over.text).not.toContain('"id":10');
});
