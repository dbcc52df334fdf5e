/**
 * The worker caches what it reads for every execution (lib/sharedCache.ts) and receives the api's invalidations: a
 * worker process that keeps its caches for a minute answers the next execution with an agent's new system prompt
 * at once after the api changed it.
 */
import { childTestEnv } from '../helpers/env';
import { buildOrg } from '../helpers/factories';
import { useTestDatabase } from '../helpers/mongo';
import { spawnScript, type Spawned } from '../helpers/processes';
import { closeAfterAll } from '../helpers/teardown';
import { v1As } from '../helpers/v1';
import { useExecutionStack } from '../helpers/worker';

const db = useTestDatabase();
// The executions run in a worker process (whose caches are tested), none in the test process.
const stack = useExecutionStack('caches', { DEFAULT_MODEL: 'claude-test', CACHE_TTL_MS: '60000' }, { worker: false });
let worker: Spawned;

beforeAll(async () => {
  worker = spawnScript('worker/index.ts', childTestEnv({ ...stack.env, MONGODB_URI: db.uri }));
  await worker.waitFor(/worker started/, 90_000);
}, 120_000);
closeAfterAll(async () => {
  worker?.child.kill('SIGTERM');
  await worker?.exited();
});

const systemOf = (i: number): string => JSON.stringify(stack.fake.requests[i].system);

it('an agent changed on the api is answered with its new system prompt by a worker that cached it', async () => {
  const org = await buildOrg();
  const as = v1As(stack.t, org.apiToken);
  const agent = await as.post('/agents', { name: 'Cached', systemPrompt: 'Prompt one.' });
  expect(agent.status).toBe(200);
  const execute = async (): Promise<number> => {
    const res = await as.post(`/agents/${agent.body.id}/execute`, { message: 'hi', stream: false });
    expect(res.status).toBe(200);
    return stack.fake.requests.length - 1;
  };
  const first = await execute();
  expect(systemOf(first)).toContain('Prompt one.');
  expect(systemOf(await execute())).toContain('Prompt one.'); // the worker read it once and kept it

  expect((await as.patch(`/agents/${agent.body.id}`, { systemPrompt: 'Prompt two.' })).status).toBe(200);
  const after = await execute();
  expect(systemOf(after)).toContain('Prompt two.');
  expect(systemOf(after)).not.toContain('Prompt one.');
});
