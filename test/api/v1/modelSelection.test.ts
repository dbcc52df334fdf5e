/**
 * Which model answers an agent that names none (lib/providers resolveModel), end to end: real api over HTTP, real
 * Temporal worker, the official Anthropic SDK against the fake Anthropic server. DEFAULT_MODEL is unset here.
 */
import { randomBytes } from 'node:crypto';
import { DEFAULT_ANTHROPIC_MODEL, NO_PROVIDER_NOTE } from '../../../lib/providers';
import { startFakeAnthropic, type FakeAnthropic } from '../../../scripts/fakes/anthropic';
import { createTestApp, type TestApp } from '../../helpers/app';
import { buildOrg } from '../../helpers/factories';
import { useTestDatabase } from '../../helpers/mongo';
import { v1As } from '../../helpers/v1';
import { startTestWorker, type TestWorker } from '../../helpers/worker';

useTestDatabase();
let fake: FakeAnthropic;
let withAnthropic: TestApp;
let withNothing: TestApp;
let worker: TestWorker;

// Both apps share one task queue and one worker; only the api's configuration decides the provider.
const queue = `models-${randomBytes(4).toString('hex')}`;
const noProvider = { ANTHROPIC_API_KEY: '', OPENAI_API_KEY: '', OPENAI_BASE_URL: '', DEFAULT_MODEL: '' };

beforeAll(async () => {
  fake = await startFakeAnthropic();
  const anthropic = { ...noProvider, ANTHROPIC_API_KEY: 'test-key', ANTHROPIC_BASE_URL: fake.url };
  withAnthropic = createTestApp({ ...anthropic, TEMPORAL_TASK_QUEUE: queue });
  withNothing = createTestApp({ ...noProvider, TEMPORAL_TASK_QUEUE: queue });
  worker = await startTestWorker(withAnthropic.config);
});
afterAll(async () => {
  await worker?.stop();
  await withAnthropic?.close();
  await withNothing?.close();
  await fake?.close();
});

async function executeWithoutModel(
  app: TestApp,
  message: string
): Promise<{ result: string; execution: Record<string, unknown> }> {
  const org = await buildOrg();
  const as = v1As(app, org.apiToken);
  const agent = await as.post('/agents', { name: 'No model', systemPrompt: 'Be brief.' });
  expect(agent.status).toBe(200);
  const res = await as.post(`/agents/${agent.body.id}/execute`, { message });
  expect(res.status).toBe(200);
  const read = await as.get(`/executions/${res.body.executionId}`);
  return { result: res.body.result, execution: read.body.execution };
}

it('an agent without a model is answered by Anthropic when only its key is configured', async () => {
  const before = fake.requests.length;
  const { result, execution } = await executeWithoutModel(withAnthropic, 'who answers?');
  expect(result).toBe('Echo: who answers?');
  expect(fake.requests.length).toBe(before + 1);
  expect(fake.requests.at(-1)!.model).toBe(DEFAULT_ANTHROPIC_MODEL);
  expect(execution).toMatchObject({ provider: 'anthropic', model: DEFAULT_ANTHROPIC_MODEL });
});

it('with no provider configured the built-in model answers and says why', async () => {
  const before = fake.requests.length;
  const { result, execution } = await executeWithoutModel(withNothing, 'hello');
  expect(result).toBe(`I am the built-in offline model (${NO_PROVIDER_NOTE}). You said: "hello".`);
  expect(fake.requests.length).toBe(before);
  expect(execution).toMatchObject({ provider: 'builtin', model: 'builtin' });
});
