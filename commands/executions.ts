/**
 * Reads of executions (one, a list, the tree of sub-agent runs, waiting for the outcome) and their cancellation.
 * Starting one: commands/executionStart.ts.
 */
import type { Client } from '@temporalio/client';
import { NotFoundError, ValidationError } from '../lib/errors';
import { abortRunningCall, broadcastAbort } from '../lib/runningCalls';
import { paginate } from '../lib/pagination';
import { whileTemporalAnswers } from '../lib/temporal';
import { Execution, TERMINAL_EXECUTION_STATUSES, type ExecutionDoc, type ExecutionStatus } from '../models';
import type { AgentExecutionOutcome, AgentExecutionWorkflow } from '../workflows/definitions';
import { executionWorkflowId } from '../workflows/ids';
import { dropHandOver } from './executionClaim';
import type { ExecutionDeps } from './executionStart';
import type { AuthContext } from './tokens';

const NOT_FOUND = 'Execution not found';

/**
 * @param auth the caller.
 * @param id execution id.
 * @returns the execution of the caller's organization.
 */
export async function findExecution(auth: AuthContext, id: string): Promise<ExecutionDoc> {
  const exec = await Execution.findOne({ _id: id, organizationId: auth.organizationId }).lean<ExecutionDoc>();
  if (!exec) throw new NotFoundError(NOT_FOUND);
  return exec;
}

/**
 * Waits until the execution's workflow has finished.
 * @param deps Temporal.
 * @param id execution id.
 * @returns its final status and reply.
 */
export async function awaitExecution(deps: ExecutionDeps, id: string): Promise<{ status: string; result: string }> {
  const handle = deps.temporal.client.workflow.getHandle<AgentExecutionWorkflow>(executionWorkflowId(id));
  // While Temporal is away the wait ends with 503 (the execution itself goes on: GET /executions/{id} reads it).
  const outcome = (await whileTemporalAnswers(deps.temporal, deps.config.dependencyTimeoutMs, () =>
    handle.result()
  )) as AgentExecutionOutcome | undefined;
  // The workflow returns its reply; workflows started before it did are read back from the record.
  if (outcome?.status && (outcome.status !== 'completed' || outcome.text !== undefined))
    return { status: outcome.status, result: outcome.text ?? '' };
  const exec = await Execution.findById(id).lean<ExecutionDoc>();
  if (!exec) throw new NotFoundError(NOT_FOUND);
  return { status: exec.status, result: exec.result ?? '' };
}

/**
 * @param auth the caller.
 * @param filters agentId, status and taskId.
 * @param page limit and cursor.
 * @returns executions of the caller's organization, newest first.
 */
export async function listExecutions(
  auth: AuthContext,
  filters: { agentId?: string; status?: string; taskId?: string },
  page: { limit: number; cursor?: string }
): Promise<{ items: ExecutionDoc[]; nextCursor: string | null }> {
  const filter: Record<string, string> = { organizationId: auth.organizationId };
  if (filters.agentId) filter.agentId = filters.agentId;
  if (filters.status) filter.status = filters.status;
  if (filters.taskId) filter.taskId = filters.taskId;
  return paginate<ExecutionDoc>(Execution, filter, page);
}

/**
 * @param auth the caller.
 * @param id execution id.
 * @returns the execution and every execution below it (children by parentExecutionId).
 */
export async function executionTree(
  auth: AuthContext,
  id: string
): Promise<{ root: ExecutionDoc; all: ExecutionDoc[] }> {
  const root = await findExecution(auth, id);
  const family = await Execution.find({ organizationId: auth.organizationId, rootExecutionId: root.rootExecutionId })
    .sort({ createdAt: 1 })
    .limit(1000)
    .lean<ExecutionDoc[]>();
  return { root, all: family };
}

/**
 * Cancels the running sub-agents of an execution, and theirs (workflow cancellation; a child whose workflow never
 * started is marked cancelled). Each child's own finish frees its session and writes its terminal event.
 * @param client a Temporal client.
 * @param parent the execution.
 * @returns how many children were asked to stop.
 */
export async function cancelSubAgents(
  client: Client,
  parent: Pick<ExecutionDoc, '_id' | 'organizationId'>
): Promise<number> {
  // By the parent (its index's leading field), within its organization (docs/query-shapes.md).
  const children = await Execution.find({ parentExecutionId: parent._id, organizationId: parent.organizationId })
    .select({ _id: 1, organizationId: 1, status: 1, parentToolCallId: 1 })
    .limit(100)
    .lean<Array<Pick<ExecutionDoc, '_id' | 'organizationId' | 'status' | 'parentToolCallId'>>>();
  const running = children.filter(
    (c) => c.parentToolCallId && !TERMINAL_EXECUTION_STATUSES.includes(c.status as ExecutionStatus)
  );
  await Promise.all(
    running.map(async (c) => {
      try {
        await client.workflow.getHandle(executionWorkflowId(c._id)).cancel();
      } catch (err) {
        if ((err as Error).name !== 'WorkflowNotFoundError') throw err;
        // Never started (its parent stopped in between), or already closed: a pending one ends here.
        await Execution.updateOne(
          { _id: c._id, status: 'pending' },
          {
            $set: {
              status: 'cancelled',
              error: { message: 'Execution cancelled', code: 'cancelled' },
              completedAt: new Date(),
            },
          }
        );
      }
      await cancelSubAgents(client, c);
    })
  );
  return running.length;
}

/**
 * Stops an execution's running reply at once (direct cancel, lib/runningCalls.ts): records that a cancel was
 * requested (what another process checks before acting, and what a reply starting later sees), then aborts the
 * reply in this process, or asks the other processes to. Temporal's cancellation is the caller's to request too.
 * @param executionId the execution (of the caller's organization: checked by the caller).
 */
export async function abortReply(executionId: string): Promise<void> {
  await Execution.updateOne({ _id: executionId }, { $set: { cancelRequestedAt: new Date() } });
  // A reply of an eager start of this process that has not taken its record yet claims it in the database instead,
  // and sees the cancel there (commands/executionClaim.ts); one that took it registered first, and is aborted here.
  dropHandOver(executionId);
  if (!abortRunningCall(executionId)) await broadcastAbort(executionId);
}

/**
 * Cancels a pending or running execution: its workflow is cancelled (so nothing resumes it after a crash), then its
 * running reply is aborted directly ({@link abortReply}); then waits briefly for the workflow to record it.
 * @param deps Temporal.
 * @param auth the caller.
 * @param id execution id.
 * @returns the execution after cancellation (normally `cancelled`).
 */
export async function cancelExecution(
  deps: Pick<ExecutionDeps, 'temporal'>,
  auth: AuthContext,
  id: string
): Promise<ExecutionDoc> {
  const exec = await findExecution(auth, id);
  if (TERMINAL_EXECUTION_STATUSES.includes(exec.status as never)) {
    throw new ValidationError('Only pending or running executions can be cancelled');
  }
  // Temporal's cancellation first: when the engine is away the cancel fails (503) and nothing is stopped.
  await deps.temporal.client.workflow.getHandle(executionWorkflowId(id)).cancel();
  await abortReply(id);
  // Its running sub-agents at once (its own finish cancels them too, once its worker sees the cancellation).
  await cancelSubAgents(deps.temporal.client, exec);
  const deadline = Date.now() + 5000;
  for (;;) {
    const now = await Execution.findById(id).lean<ExecutionDoc>();
    if (!now || TERMINAL_EXECUTION_STATUSES.includes(now.status as never) || Date.now() > deadline) return now ?? exec;
    await new Promise((r) => setTimeout(r, 50));
  }
}
