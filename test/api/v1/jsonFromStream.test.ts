/**
 * A JSON execution is answered from its stream (commands/executions.ts `awaitExecution`, issue 37), not from Temporal's
 * long poll for the workflow's result: here its workflow runs in a worker-only process, so the outcome reaches the api
 * with the wake-up of the finish and its tailer's head read (lib/wakeups.ts), never from memory. The api's Temporal
 * connection is watched for the long poll (`GetWorkflowExecutionHistory`), which the wait used to make.
 */
import { randomInt } from 'node:crypto';
import { Execution, type ExecutionDoc } from '../../../models';
import { buildOrg } from '../../helpers/factories';
import { useTestDatabase } from '../../helpers/mongo';
import { v1As, v1Error } from '../../helpers/v1';
import { useExecutionStack, useWorkerProcesses } from '../../helpers/worker';

const db = useTestDatabase();
// No worker in the test process: the api's own process runs no workflow.
const stack = useExecutionStack('json-stream', { DEFAULT_MODEL: 'claude-test' }, { worker: false });

/**
 * @param check what is polled.
 * @param done whether it is there.
 * @returns the first value `done` accepts (or the last one read after 30 s).
 */
async function until<T>(check: () => Promise<T>, done: (v: T) => boolean): Promise<T> {
  const end = Date.now() + 30_000;
  for (;;) {
    const v = await check();
    if (done(v) || Date.now() > end) return v;
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('an execution whose workflow runs in a worker-only process', () => {
  const processes = useWorkerProcesses(stack, db);
  beforeAll(async () => {
    await processes.start();
  }, 120_000);

  it('completed, failed and cancelled: each answered as its record says, without a result long poll', async () => {
    const history = jest.spyOn(stack.t.temporal.connection.workflowService, 'getWorkflowExecutionHistory');
    const org = await buildOrg();
    const as = v1As(stack.t, org.apiToken);
    const agent = (await as.post('/agents', { name: 'Echo', systemPrompt: 'x' })).body.id as string;

    // Completed: the reply as recorded, in the documented shape.
    const done = await as.post(`/agents/${agent}/execute`, { message: `[chunks:12] hello ${randomInt(1e6)}` });
    expect(done.status).toBe(200);
    const exec = await Execution.findById(done.body.executionId).lean<ExecutionDoc>();
    expect(exec).toMatchObject({ status: 'completed' });
    expect(exec!.result).toMatch(/\S/);
    expect(done.body).toEqual({
      success: true,
      executionId: exec!._id,
      chatId: exec!.chatId,
      sessionId: exec!.sessionId,
      result: exec!.result,
    });

    // Failed: the spec's message.
    const failed = await as.post(`/agents/${agent}/execute`, { message: 'bad [fail:400]' });
    expect(failed.body).toEqual(v1Error(500, 'Internal Server Error', 'Chat execution failed'));

    // Cancelled while the JSON client waits.
    const slow = as.post(`/agents/${agent}/execute`, { message: `[chunks:400][slow:100] ${randomInt(1e6)}` });
    const answered = slow.then((r) => r);
    const running = await until(
      () => Execution.findOne({ organizationId: org.organizationId, status: 'running' }).lean<ExecutionDoc>(),
      (e) => e !== null
    );
    expect((await as.post(`/executions/${running!._id}/cancel`)).status).toBe(200);
    expect((await answered).body).toEqual(v1Error(409, 'Conflict', 'Execution was cancelled'));

    // No wait read the workflow's history (the long poll for its result).
    expect(history).not.toHaveBeenCalled();
    history.mockRestore();
  }, 120_000);
});
