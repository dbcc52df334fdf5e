/**
 * Eager start (docs/architecture.md §1, docs/decisions.md "Process roles"): an app whose process runs a worker on its own
 * NativeConnection (worker/create.ts `runInProcessWorker`, as a service process does) starts an execution with eager
 * workflow start, so its first workflow task, which runs the whole reply, comes back in the start call's answer and
 * runs in this process. When the eager start is refused (here: a client on a connection with no worker for the task
 * queue), the execution still runs on any worker.
 */
import { NativeConnection } from '@temporalio/worker';
import { Client } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { executionsStartedEagerly } from '../../lib/metrics';
import { temporalExtensions } from '../../lib/dataConverter';
import { temporalConnectionOptions } from '../../lib/temporal';
import { executionWorkflowId } from '../../workflows/ids';
import { buildOrg } from '../helpers/factories';
import { useTestDatabase } from '../helpers/mongo';
import { v1As } from '../helpers/v1';
import { useExecutionStack } from '../helpers/worker';

useTestDatabase();
const stack = useExecutionStack('eager', {}, { service: true });

const eagerStarts = async (): Promise<number> => (await executionsStartedEagerly.get()).values[0]?.value ?? 0;

it('an execution started by a process that runs a worker starts eagerly and runs there, in one workflow task', async () => {
  const org = await buildOrg();
  const as = v1As(stack.t, org.apiToken);
  const agent = await as.post('/agents', { name: 'Echo', systemPrompt: 'x' });
  const before = await eagerStarts();
  const res = await as.post(`/agents/${agent.body.id}/execute`, { message: '[chunks:3] hi' });
  expect(res.status).toBe(200);
  expect(res.body.result).toBe('tok1 tok2 tok3 ');
  expect(await eagerStarts()).toBe(before + 1);
  // The answer comes with the outcome, before the workflow task completes: its history is read once it has.
  const handle = stack.t.temporal.client.workflow.getHandle(executionWorkflowId(res.body.executionId));
  await handle.result();
  const history = await handle.fetchHistory();
  const types = (history.events ?? []).map((e) => temporal.api.enums.v1.EventType[e.eventType ?? 0]);
  // The whole execution is the first workflow task: its local activity, then the result.
  expect(types.filter((t) => t === 'EVENT_TYPE_WORKFLOW_TASK_COMPLETED')).toHaveLength(1);
  expect(types.at(-1)).toBe('EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED');
}, 60_000);

it('when the eager start is refused, the execution runs on any worker', async () => {
  const connection = await NativeConnection.connect(temporalConnectionOptions(stack.t.config));
  const own = stack.t.temporal.eager;
  // A client on a connection with no worker: the start asks for no eager task, and the worker polling the queue runs it.
  stack.t.temporal.eager = new Client({
    connection,
    namespace: stack.t.config.temporalNamespace,
    ...temporalExtensions(stack.t.config).client,
  });
  try {
    const org = await buildOrg();
    const as = v1As(stack.t, org.apiToken);
    const agent = await as.post('/agents', { name: 'Echo', systemPrompt: 'x' });
    const before = await eagerStarts();
    const res = await as.post(`/agents/${agent.body.id}/execute`, { message: '[chunks:2] hi' });
    expect(res.status).toBe(200);
    expect(res.body.result).toBe('tok1 tok2 ');
    expect(await eagerStarts()).toBe(before);
  } finally {
    stack.t.temporal.eager = own;
    await connection.close();
  }
}, 60_000);
