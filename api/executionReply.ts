/**
 * Replying to a just-started execution, as JSON once it finished or as its event stream, as the client asked: what
 * both surfaces (POST /api/v1/agents/{id}/execute, the client library's execute) and the MCP tools share
 * (docs/architecture.md §3: what both surfaces use sits in api/ itself).
 */
import { metaEvent } from '../commands/executionMeta';
import { awaitExecution, isExecutionTerminal } from '../commands/executions';
import { ConflictError, ExecutionFailedError } from '../lib/errors';
import type { ExecutionDoc } from '../models';
import type { AppContext } from './context';
import type { ExecutionRouteDeps } from './deps';
import { streamEvents } from './sse';

/**
 * @param ctx the request's context.
 * @returns aborted when the client goes away before its answer is complete (a request waiting for an execution's
 *   admission then leaves the line: lib/executionAdmission.ts).
 */
export function clientGone(ctx: AppContext): AbortSignal {
  const gone = new AbortController();
  ctx.res.once('close', () => {
    if (!ctx.res.writableFinished) gone.abort();
  });
  return gone.signal;
}

/**
 * Answers an execution as JSON (after it finished) or as an event stream, as the client asked.
 * @param deps app dependencies.
 * @param ctx the context.
 * @param exec the just-started execution.
 * @param stream whether to stream.
 */
export async function replyToExecution(
  deps: ExecutionRouteDeps,
  ctx: AppContext,
  exec: ExecutionDoc,
  stream: boolean
): Promise<void> {
  // Seeing the execution end frees its admission slot at once when it ran in another process (where this one's
  // finish hook does not fire; lib/executionAdmission.ts); a repeat release is harmless.
  const ended = (): void => deps.admission?.releaseExecution(exec._id);
  if (stream) {
    await streamEvents(ctx, {
      streamId: exec._id,
      afterSeq: 0,
      // The `meta` event this request wrote before the start goes out at once (a rerun's copied steps are read).
      ...(exec.rerunOf ? {} : { known: [metaEvent(exec)] }),
      tailer: deps.events,
      shutdown: deps.shutdown,
      isTerminal: (event) => {
        // Queued for a concurrency key: its slot comes back while it waits (when its claim ran in another process).
        if (event.event === 'queued') deps.admission?.releaseQueued(exec._id);
        const terminal = isExecutionTerminal(event);
        if (terminal) ended();
        return terminal;
      },
      heartbeatMs: deps.config.sseHeartbeatMs,
    });
    return;
  }
  const done = await awaitExecution(deps, exec, {
    // Queued for a concurrency key: its slot comes back while it waits, as for a stream (above).
    onEvent: (event) => {
      if (event.event === 'queued') deps.admission?.releaseQueued(exec._id);
    },
  });
  ended();
  if (done.status === 'completed') {
    ctx.body = {
      success: true,
      executionId: exec._id,
      chatId: exec.chatId,
      sessionId: exec.sessionId,
      result: done.result,
    };
    return;
  }
  if (done.status === 'cancelled') throw new ConflictError('Execution was cancelled');
  throw new ExecutionFailedError();
}
