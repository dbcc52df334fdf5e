/**
 * The chat event stream (`chat:<chatId>`, commands/eventLog.ts) mirrors the executions of the chat [docs/decisions.md
 * "Chat event stream"]. Only the execution workflow's activities write it, one execution at a time, at seqs fixed
 * in advance:
 *
 * - An execution owns the chat seqs after `chatSeqBase` (the session's `chatStreamSeq` when it took the session):
 *   `base + 1` is `message.created` (the user message), and the execution's own event `s` is mirrored at
 *   `base + 1 + s` (`meta` → `chat.status` working, text deltas → `message.delta`, the assistant message →
 *   `message.completed`, tool calls and results (`message` events of `messageType` `tool_use` / `tool_result`)
 *   → `tool.call` / `tool.result`, a sub-agent's `subagent_started` / `subagent_finished` → `subagent.started` /
 *   `subagent.finished`, `result` / `error` →
 *   `chat.status` done / error / standby). The range ends at
 *   `base + 1 + <last execution seq>`, which the finishing activity stores on the session in the same write that
 *   frees it, so the next execution starts right after it.
 * - Seqs are deterministic, so a retried activity rewrites the same ids (appendEvents keeps the first copy): no
 *   duplicate, no gap. Writers never overlap: an execution writes to the chat stream only once the stream's head
 *   has reached its base (the previous execution's events are all written), so the head only moves forward and
 *   readers never meet a hole.
 */
import { ApplicationFailure } from '@temporalio/common';
import { SUBAGENT_FINISHED, SUBAGENT_STARTED } from '../commands/subAgents';
import { appendEvents, lastSeq, type LoggedEvent } from '../commands/eventLog';
import { toolEventKind } from '../commands/executionSteps';
import { chatStatusOf, chatStreamId, type ChatStatus, type ExecutionDoc, type ExecutionStatus } from '../models';
import { parseReplyRequest } from '../workflows/jobStates';

/** How long an activity waits for the previous execution's chat events before its attempt fails (and is retried). */
const PREVIOUS_RANGE_WAIT_MS = 3000;
const PREVIOUS_RANGE_POLL_MS = 50;

/** The chat-stream fields of an execution the mirror needs. */
export type MirroredExecution = Pick<
  ExecutionDoc,
  '_id' | 'chatId' | 'chatSeqBase' | 'input' | 'turn' | 'organizationId' | 'source' | 'error' | 'jobId'
>;

/** What a job iteration's reply asks of a human, as the chat shows it (`review` of a `chat.status` event). */
export interface ChatReview {
  job_id: string;
  /** The job's state while it waits: a review of the work, or the input its agent asked for. */
  state: 'awaiting_review' | 'blocked';
  question: string | null;
}

/**
 * The status an execution leaves its chat in [docs/decisions.md "Chat event stream"]: a job iteration whose reply
 * asks for a review or for input leaves it `needs_attention` (its job waits for a human: workflows/jobStates.ts
 * `parseReplyRequest`, the same rule the job follows); any other outcome is {@link chatStatusOf}.
 * @param exec the execution.
 * @param status its final status.
 * @param reply its reply (completed executions).
 * @returns the chat's status and, for a job waiting for a human, what it waits for.
 */
export function chatStatusAfter(
  exec: Pick<MirroredExecution, 'source' | 'jobId'>,
  status: ExecutionStatus,
  reply: string
): { status: ChatStatus; review: ChatReview | null } {
  if (status !== 'completed' || exec.source !== 'job' || !exec.jobId)
    return { status: chatStatusOf(status), review: null };
  const asked = parseReplyRequest(reply);
  if (asked.kind === 'none') return { status: chatStatusOf(status), review: null };
  return {
    status: 'needs_attention',
    review: {
      job_id: exec.jobId,
      state: asked.kind === 'review' ? 'awaiting_review' : 'blocked',
      question: asked.kind === 'input' ? asked.question : null,
    },
  };
}

/**
 * Whether an execution writes its chat's stream: the messages sent through /api/chats do, and the iterations of a
 * job (in the job's own chat). Executions started by
 * the v1 or client-library execute in the same chat appear in its messages and work summary, not in its stream
 * (they have their own stream), so those endpoints pay nothing for chat streams; they own no chat seqs. An
 * execution the api gave up starting (`start_failed`) never held its session and owns none either.
 * @param exec the execution.
 * @returns whether it owns a range of the chat stream.
 */
export const mirrorsToChat = (exec: MirroredExecution): boolean =>
  (exec.source === 'chat' || exec.source === 'job') && exec.error?.code !== 'start_failed';

/** What kind of tool event an event is (the definition lives with the reply's steps). */
export { toolEventKind };

/** The MCP server and tool of a tool event (commands/agentMcpTools.ts McpToolRef). */
interface McpRef {
  serverId: string;
  server: string;
  tool: string;
}
const chatMcpRef = (m: McpRef) => ({ server_id: m.serverId, server: m.server, tool: m.tool });

/** @returns the chat seq of an execution's event `seq`. */
export const chatSeqOf = (exec: MirroredExecution, seq: number): number => (exec.chatSeqBase ?? 0) + 1 + seq;

/**
 * The chat event that mirrors one execution event.
 * @param exec the execution.
 * @param e its event.
 * @param outcome the execution's final status (for its terminal `error` event: failed or cancelled).
 * @param reply the completed execution's reply (for its `result` event: a job waiting for a human).
 * @returns the chat event, at its chat seq.
 */
export function chatEventOf(
  exec: MirroredExecution,
  e: LoggedEvent,
  outcome?: ExecutionStatus,
  reply = ''
): LoggedEvent {
  const seq = chatSeqOf(exec, e.seq);
  const base = { chat_id: exec.chatId, execution_id: exec._id };
  const data = e.data as {
    messageType?: string;
    delta?: { text: string };
    content?: Array<{ text: string }>;
    message?: string;
  };
  const tool = toolEventKind(e);
  switch (tool ?? e.event) {
    case 'meta':
      return { seq, event: 'chat.status', data: { ...base, status: chatStatusOf('running'), error: null } };
    case 'message':
      // A sub-agent's start and end under a tool call (commands/subAgents.ts).
      if (data.messageType === SUBAGENT_STARTED || data.messageType === SUBAGENT_FINISHED) {
        const d = e.data as {
          toolUseId: string;
          executionId: string;
          agentId: string;
          status?: string;
          usage?: object;
        };
        return {
          seq,
          event: data.messageType === SUBAGENT_STARTED ? 'subagent.started' : 'subagent.finished',
          data: {
            ...base,
            tool_use_id: d.toolUseId,
            subagent_execution_id: d.executionId,
            agent_id: d.agentId,
            ...(d.status ? { status: d.status, usage: d.usage } : {}),
          },
        };
      }
      if (data.messageType === 'assistant')
        return {
          seq,
          event: 'message.completed',
          data: {
            ...base,
            message: {
              id: `${exec._id}:assistant`,
              role: 'assistant',
              content: (data.content ?? []).map((c) => c.text).join(''),
              position: exec.turn * 2 + 1,
            },
          },
        };
      return {
        seq,
        event: 'message.delta',
        data: { ...base, message_id: `${exec._id}:assistant`, text: data.delta?.text ?? '' },
      };
    case 'tool_use': {
      const d = e.data as { toolUseId: string; name: string; input: Record<string, unknown>; mcp?: McpRef };
      return {
        seq,
        event: 'tool.call',
        data: {
          ...base,
          tool_use_id: d.toolUseId,
          name: d.name,
          input: d.input,
          ...(d.mcp ? { mcp: chatMcpRef(d.mcp) } : {}),
        },
      };
    }
    case 'tool_result': {
      const d = e.data as { toolUseId: string; name: string; content: string; isError: boolean; mcp?: McpRef };
      return {
        seq,
        event: 'tool.result',
        data: {
          ...base,
          tool_use_id: d.toolUseId,
          name: d.name,
          content: d.content,
          is_error: d.isError,
          ...(d.mcp ? { mcp: chatMcpRef(d.mcp) } : {}),
        },
      };
    }
    case 'result': {
      const after = chatStatusAfter(exec, 'completed', reply);
      return {
        seq,
        event: 'chat.status',
        data: { ...base, status: after.status, error: null, ...(after.review ? { review: after.review } : {}) },
      };
    }
    default: {
      const status = outcome === 'cancelled' ? 'cancelled' : 'failed';
      return {
        seq,
        event: 'chat.status',
        data: { ...base, status: chatStatusOf(status), error: { message: data.message ?? 'Chat execution failed' } },
      };
    }
  }
}

/** @returns the `message.created` event of the execution's user message (the first seq of its range). */
function messageCreated(exec: MirroredExecution): LoggedEvent {
  return {
    seq: (exec.chatSeqBase ?? 0) + 1,
    event: 'message.created',
    data: {
      chat_id: exec.chatId,
      execution_id: exec._id,
      message: { id: `${exec._id}:user`, role: 'user', content: exec.input?.message ?? '', position: exec.turn * 2 },
    },
  };
}

/**
 * Waits until the chat stream holds every event before the execution's range (the previous execution's finishing
 * activity may still be writing them), so that two executions never write the stream at once.
 * @param exec the execution.
 * @returns the stream's head.
 * @throws a retryable ApplicationFailure when they are still missing after a few seconds.
 */
async function awaitPreviousRange(exec: MirroredExecution): Promise<number> {
  const streamId = chatStreamId(exec.chatId);
  const deadline = Date.now() + PREVIOUS_RANGE_WAIT_MS;
  for (;;) {
    const head = await lastSeq(streamId);
    if (head >= (exec.chatSeqBase ?? 0)) return head;
    if (Date.now() > deadline)
      throw ApplicationFailure.retryable('The previous turn’s chat events are not written yet', 'ChatStreamBehind');
    await new Promise((r) => setTimeout(r, PREVIOUS_RANGE_POLL_MS));
  }
}

/**
 * Writes the chat events of the execution's events that the chat stream does not have yet (and its
 * `message.created` first): at the start of each attempt and when it finishes.
 * @param exec the execution.
 * @param events its events so far, in seq order (from 1).
 * @param outcome its final status, once known.
 */
export async function mirrorToChat(
  exec: MirroredExecution,
  events: LoggedEvent[],
  outcome?: ExecutionStatus,
  reply?: string
): Promise<void> {
  const head = await awaitPreviousRange(exec);
  const all = [messageCreated(exec), ...events.map((e) => chatEventOf(exec, e, outcome, reply))];
  await appendEvents(
    chatStreamId(exec.chatId),
    all.filter((e) => e.seq > head)
  );
}

/**
 * Mirrors one execution event just written (the reply's deltas, in order, after {@link mirrorToChat}).
 * @param exec the execution.
 * @param e the event.
 */
export async function mirrorEvent(exec: MirroredExecution, e: LoggedEvent): Promise<void> {
  await appendEvents(chatStreamId(exec.chatId), [chatEventOf(exec, e)]);
}

/** @returns the last chat seq of the execution's range once `lastExecutionSeq` is its final event. */
export const chatRangeEnd = (exec: MirroredExecution, lastExecutionSeq: number): number =>
  chatSeqOf(exec, lastExecutionSeq);
