/**
 * A client that closes a live event stream is a normal end of the response, not a server problem: the api notes it
 * at debug level and logs no warning (200 warnings with stacks per fan-out run hid real ones in the service log).
 */
import { createTestApp, type TestApp } from '../helpers/app';
import { currentAs } from '../helpers/current';
import { capturingLogger } from '../helpers/env';
import { bearer, buildOrg } from '../helpers/factories';
import { useTestDatabase } from '../helpers/mongo';
import { openSse } from '../helpers/sse';
import { until } from '../helpers/until';

useTestDatabase();

/** The app's logger, and its log lines (JSON), debug level and up. */
const { logger, lines: logLines } = capturingLogger('api', 'debug');
let t: TestApp;
let base: string;

beforeAll(async () => {
  t = createTestApp({}, logger);
  base = await t.listen();
});
afterAll(async () => {
  await t?.close();
});

it('a client closing a chat event stream is logged at debug level, with no warning', async () => {
  const org = await buildOrg();
  const api = currentAs(t, org.serviceToken);
  const agent = await api.post('/agents', { name: 'Quiet', system_prompt: 'p' });
  const ws = await api.post('/workspaces', { name: 'W' });
  const chat = await api.post('/chats', { agent_id: agent.body.agent.id, workspace_id: ws.body.workspace.id });
  expect(chat.status).toBe(201);

  for (let i = 0; i < 3; i++) {
    const stream = await openSse(`${base}/api/chats/${chat.body.chat.id}/events`, {
      headers: { authorization: bearer(org.serviceToken) },
    });
    expect(stream.status).toBe(200);
    stream.close();
  }
  const gone = (): number => logLines.filter((l) => l.msg === 'client closed the response early').length;
  await until(
    async () => gone(),
    (n) => n === 3,
    10_000
  );
  expect(logLines.filter((l) => (l.level as number) >= 40)).toEqual([]);
});
