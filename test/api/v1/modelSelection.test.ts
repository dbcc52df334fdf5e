/**
 * Which model answers an agent that names none (lib/providers resolveModel), end to end: real api over HTTP, real
 * Temporal worker, the official Anthropic SDK against the fake Anthropic server. DEFAULT_MODEL is unset here.
 */
import { DEFAULT_ANTHROPIC_MODEL, NO_PROVIDER_NOTE } from '../../../lib/providers';
import { useTestApp, type TestApp } from '../../helpers/app';
import { buildOrg } from '../../helpers/factories';
import { useTestDatabase } from '../../helpers/mongo';
import { v1As } from '../../helpers/v1';
import { useExecutionStack } from '../../helpers/worker';

useTestDatabase();
// Both apps share one task queue and one worker; only the api's configuration decides the provider.
const noProvider = { ANTHROPIC_API_KEY: '', OPENAI_API_KEY: '', OPENAI_BASE_URL: '', DEFAULT_MODEL: '' };
const stack = useExecutionStack('models', { ...noProvider, ANTHROPIC_API_KEY: 'test-key' });
const withNothing = useTestApp(() => ({ ...noProvider, TEMPORAL_TASK_QUEUE: stack.env.TEMPORAL_TASK_QUEUE }));

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
  const before = stack.fake.requests.length;
  const { result, execution } = await executeWithoutModel(stack.t, 'who answers?');
  expect(result).toBe('Echo: who answers?');
  expect(stack.fake.requests.length).toBe(before + 1);
  expect(stack.fake.requests.at(-1)!.model).toBe(DEFAULT_ANTHROPIC_MODEL);
  expect(execution).toMatchObject({ provider: 'anthropic', model: DEFAULT_ANTHROPIC_MODEL });
});

it('with no provider configured the built-in model answers and says why', async () => {
  const before = stack.fake.requests.length;
  const { result, execution } = await executeWithoutModel(withNothing, 'hello');
  expect(result).toBe(`I am the built-in offline model (${NO_PROVIDER_NOTE}). You said: "hello".`);
  expect(stack.fake.requests.length).toBe(before);
  expect(execution).toMatchObject({ provider: 'builtin', model: 'builtin' });
});
