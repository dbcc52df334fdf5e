/**
 * Reads of executions (one, a list, the tree of sub-agent runs, waiting for the outcome) and their cancellation.
 * Starting one: commands/executionStart.ts.
 */
import type { Client } from '@temporalio/client';
import { NotFoundError, ServiceUnavailableError, ValidationError } from '../lib/errors';
import { abortRunningCall, broadcastAbort } from '../lib/runningCalls';
import { paginate } from '../lib/pagination';
import { whileTemporalAnswers } from '../lib/temporal';
import { Execution, TERMINAL_EXECUTION_STATUSES, type ExecutionDoc, type ExecutionStatus } from '../models';
import { CANCELLED_MESSAGE, FAILURES } from '../workflows/failures';
import { executionWorkflowId } from '../workflows/ids';
import { dropHandOver } from './executionClaim';
import { followEvents, type EventTailer, type LoggedEvent } from './eventLog';
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

/** `result` and `error` end an execution stream. */
export const isExecutionTerminal = (e: LoggedEvent): boolean => e.event === 'result' || e.event === 'error';

/** What a JSON client is answered with: the outcome, as the execution's stream ends. */
export interface ExecutionAnswer {
  status: 'completed' | 'failed' | 'cancelled';
  /** The reply ('' unless completed). */
  result: string;
  /** The `error` event's message (failed and cancelled). */
  error?: string;
}

/**
 * Waits until the execution has finished, following its stream through this process's tailer to its terminal event
 * (issue 37: no long poll of Temporal for the workflow's result). The outcome comes from memory when the finish runs
 * in this process (commands/eventLog.ts `announceAppended`), or with the wake-up and head read of the tailer when it
 * runs in another: a completed execution's reply is its assistant `message` (the event before `result`: both are made
 * from the record, commands/executionFinal.ts), a failed or cancelled one's is told by its `error` event. The wait
 * stays under the watch of lib/temporal.ts (`whileTemporalAnswers`, the database watched too): Temporal or the
 * database silent for DEPENDENCY_TIMEOUT_MS ends it with 503 (the execution itself goes on: GET /executions/{id}
 * reads it), as does the process's shutdown.
 * @param deps Temporal, the tailer, the shutdown signal and the configuration.
 * @param exec the just-started execution: its api wrote its `meta` (seq 1) itself, so nothing is read before its
 *   next events arrive (a rerun's stream starts with copied steps: read from the start).
 * @param opts `onEvent`: called with each event after `meta`, in order (the terminal one included); `signal`: ends
 *   the wait (it then rejects with the signal's reason); `live`: the caller shows the reply's text as it comes (an MCP
 *   tool's progress), so its writer streams it (commands/eventLog.ts `followedHere`); by default the wait is for the
 *   outcome alone, and a reply that arrives whole is written once, with the finish.
 * @returns its final status and reply.
 */
export async function awaitExecution(
  deps: Pick<ExecutionDeps, 'config' | 'temporal'> & { events: EventTailer; shutdown?: AbortSignal },
  exec: Pick<ExecutionDoc, '_id' | 'rerunOf'>,
  opts: { onEvent?: (e: LoggedEvent) => void; signal?: AbortSignal; live?: boolean } = {}
): Promise<ExecutionAnswer> {
  let reply = '';
  const onEvent = (e: LoggedEvent): void => {
    const data = e.data as { messageType?: string; content?: Array<{ type?: string; text?: string }> };
    if (e.event === 'message' && data.messageType === 'assistant')
      reply = (data.content ?? []).map((c) => (c.type === 'text' ? (c.text ?? '') : '')).join('');
    opts.onEvent?.(e);
  };
  const replay = exec.rerunOf != null;
  const end = await whileTemporalAnswers(
    deps.temporal,
    deps.config.dependencyTimeoutMs,
    (watch) => {
      const signals = [watch, ...(opts.signal ? [opts.signal] : []), ...(deps.shutdown ? [deps.shutdown] : [])];
      return followEvents(
        deps.events,
        exec._id,
        replay ? 0 : 1,
        onEvent,
        isExecutionTerminal,
        AbortSignal.any(signals),
        { replay, live: opts.live ?? false }
      ).catch((err: unknown) => {
        // At shutdown the wait ends as an outage does (the request is answered 503).
        if (deps.shutdown?.aborted && !watch.aborted && !opts.signal?.aborted) throw new ServiceUnavailableError();
        throw err;
      });
    },
    { database: true }
  );
  if (end.event === 'result') return { status: 'completed', result: reply };
  const message = String((end.data as { message?: unknown }).message ?? FAILURES.internal.message);
  return { status: message === CANCELLED_MESSAGE ? 'cancelled' : 'failed', result: '', error: message };
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
              error: { message: CANCELLED_MESSAGE, code: 'cancelled' },
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
