/**
 * A client that closes a live event stream is a normal end of the response, not a server problem: the api notes it
 * at debug level and logs no warning (200 warnings with stacks per fan-out run hid real ones in the service log).
 */
import { useServedTestApp } from '../helpers/app';
import { currentAs } from '../helpers/current';
import { capturingLogger } from '../helpers/env';
import { bearer, buildAgent, buildOrg, buildWorkspace } from '../helpers/factories';
import { useTestDatabase } from '../helpers/mongo';
import { openSse } from '../helpers/sse';
import { until } from '../helpers/until';

useTestDatabase();

/** The app's logger, and its log lines (JSON), debug level and up. */
const { logger, lines: logLines } = capturingLogger('api', 'debug');
const app = useServedTestApp({}, { logger });

it('a client closing a chat event stream is logged at debug level, with no warning', async () => {
  const org = await buildOrg();
  const api = currentAs(app.t, org.serviceToken);
  const agentId = await buildAgent(app.t, org, { name: 'Quiet', system_prompt: 'p' });
  const { id: workspaceId } = await buildWorkspace(app.t, { org, name: 'W' });
  const chat = await api.post('/chats', { agent_id: agentId, workspace_id: workspaceId });
  expect(chat.status).toBe(201);

  for (let i = 0; i < 3; i++) {
    const stream = await openSse(`${app.base}/api/chats/${chat.body.chat.id}/events`, {
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
