/** Execution → public JSON (docs/decisions.md "Executions"). */
import type { ExecutionDoc } from '../models';
import { iso } from './time';

/**
 * @param e the stored execution.
 * @returns the public record.
 */
export function presentExecution(e: ExecutionDoc): Record<string, unknown> {
  const end = e.completedAt ?? null;
  return {
    id: e._id,
    executionId: e._id,
    status: e.status,
    agentId: e.agentId,
    userId: e.userId,
    chatId: e.chatId,
    sessionId: e.sessionId,
    spaceId: e.spaceId,
    input: { message: e.input?.message ?? '', ...(e.input?.mediaIds?.length ? { mediaIds: e.input.mediaIds } : {}) },
    result: e.result ?? null,
    error: e.error?.message ? { message: e.error.message, code: e.error.code ?? 'failed' } : null,
    provider: e.provider,
    model: e.model,
    modelNote: e.modelNote ?? null,
    usage: { input_tokens: e.usage?.inputTokens ?? 0, output_tokens: e.usage?.outputTokens ?? 0 },
    parentExecutionId: e.parentExecutionId ?? null,
    rootExecutionId: e.rootExecutionId,
    parentToolCallId: e.parentToolCallId ?? null,
    depth: e.depth ?? 0,
    taskId: e.taskId ?? null,
    source: e.source,
    createdAt: e.createdAt.toISOString(),
    startedAt: iso(e.startedAt),
    completedAt: iso(end),
    durationMs: e.startedAt && end ? end.getTime() - e.startedAt.getTime() : null,
    requestId: e.requestId ?? null,
    rerunOf: e.rerunOf?.executionId ? { executionId: e.rerunOf.executionId, fromStep: e.rerunOf.fromStep ?? 1 } : null,
  };
}
