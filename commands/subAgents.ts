/**
 * Sub-agents [docs/decisions.md "Sub-agents"]: the built-in tool `delegate_to_agent` lets an agent hand a task to
 * another agent of its organization (one of its `subAgentIds`). The task runs as a child execution: its own record
 * (`parentExecutionId`, `parentToolCallId`, `depth`), its own conversation and its own workflow
 * `execution-<childId>`, started by the tool call through the worker's Temporal client (the tool loop runs in an
 * activity, and only workflow code can start a Temporal child workflow). The child's id is derived from the parent's
 * id and the call's id, so a retried call (its worker killed between starting the child and recording its result)
 * finds the same child and waits for it instead of starting another. The child's reply is the call's result; its
 * usage is added to the parent's. Depth and fan-out are limited (lib/config.ts `agentTools`); a call past a limit is
 * an error result for the model, never a failed execution.
 */
import { WorkflowFailedError, type Client } from '@temporalio/client';
import { WorkflowExecutionAlreadyStartedError } from '@temporalio/common';
import type { Config } from '../lib/config';
import { admitChild, type AdmissionSlot } from '../lib/executionAdmission';
import { sha256Hex } from '../lib/crypto';
import type { LoggedEvent } from './eventLog';
import type { Logger } from '../lib/logger';
import { insertDocument, isDuplicateKey } from '../lib/mongo';
import { resolveModel, type ModelTool } from '../lib/providers';
import {
  Agent,
  Chat,
  Execution,
  Session,
  TERMINAL_EXECUTION_STATUSES,
  type AgentDoc,
  type ExecutionDoc,
  type ExecutionStatus,
} from '../models';
import { executionWorkflowId } from '../workflows/ids';
import type { ToolOutcome } from './agentFileTools';
import { capOutput } from './agentMcpTools';
import { canSee } from './agents';
import { recordPendingExecution, startExecutionWorkflow } from './executionStart';
import { holdsSession, sessionFields, sessionIdOf } from './conversations';

/** The tool's name. */
export const DELEGATE_TOOL = 'delegate_to_agent';
/** Most agents one agent may list in `subAgentIds`. */
export const MAX_SUB_AGENTS = 20;
/** Longest task a call may hand over (the execute body's message cap). */
const MAX_TASK_CHARS = 100_000;
/** Longest agent description line offered to the model. */
const MAX_AGENT_LINE = 300;

/** The `message` event types a delegation writes into its parent's stream, under the call's `toolUseId`. */
export const SUBAGENT_STARTED = 'subagent_started';
/** The error result of a delegation refused by the admission of executions (no free slot in this process). */
export const AT_CAPACITY =
  'The service is at capacity for executions: no sub-agent can start now. Do the task yourself.';
export const SUBAGENT_FINISHED = 'subagent_finished';

type Usage = { inputTokens: number; outputTokens: number };

/**
 * The ids of a call's child: derived from the parent's execution id and the call's id (the same on every retry).
 * The execution id keeps the `exec-<ms>-<suffix>` shape, with the parent's milliseconds.
 * @param parentId the parent execution.
 * @param toolUseId the call.
 * @returns the child's execution, chat and session ids.
 */
export function subAgentIds(
  parentId: string,
  toolUseId: string
): { executionId: string; chatId: string; sessionId: string } {
  const suffix = sha256Hex(`${parentId}\0${toolUseId}`).slice(0, 16);
  const ms = /^exec-(\d+)-/.exec(parentId)?.[1] ?? '0';
  // The session is on the chat, under the id derived from the chat's (commands/conversations.ts).
  const chatId = `chat_sub${suffix}`;
  return { executionId: `exec-${ms}-${suffix}`, chatId, sessionId: sessionIdOf(chatId) };
}

/**
 * An execution's usage with its sub-agents' (each child's own usage includes its children's).
 * @param own the execution's own model usage.
 * @param childUsage the usage of the children whose results it took (`childUsage` on the record).
 * @returns the sum.
 */
export function withChildUsage(own: Usage, childUsage: unknown): Usage {
  let { inputTokens, outputTokens } = own;
  for (const u of Object.values((childUsage ?? {}) as Record<string, Partial<Usage>>)) {
    inputTokens += u.inputTokens ?? 0;
    outputTokens += u.outputTokens ?? 0;
  }
  return { inputTokens, outputTokens };
}

/** What a delegation needs of its parent execution. */
type Parent = Pick<
  ExecutionDoc,
  '_id' | 'organizationId' | 'userId' | 'spaceId' | 'rootExecutionId' | 'depth' | 'requestId' | 'childUsage'
>;

/** A call of the tool, as recorded in the parent's stream. */
interface Call {
  id: string;
  input: Record<string, unknown>;
}

/** The sub-agent tool of one execution. */
export class SubAgentTools {
  private constructor(
    private readonly config: Pick<Config, 'agentTools' | 'executionDeadlineSeconds' | 'temporalTaskQueue'> &
      Parameters<typeof resolveModel>[1],
    private readonly parent: Parent,
    /** The agents it may call, by id. */
    private readonly agents: Map<string, AgentDoc>,
    /** `<messageType>:<toolUseId>` of the sub-agent events already in the parent's stream (a retried attempt). */
    private readonly recorded: Set<string>,
    /** The tool as offered to the model (none: not offered). */
    readonly offered: ModelTool[]
  ) {}

  /**
   * Reads the agents the execution's agent may delegate to (its `subAgentIds` that are live agents of its
   * organization the execution's user can see).
   * @param config limits, model defaults, the task queue.
   * @param parent the execution.
   * @param agent its agent.
   * @param toolUse whether the execution's model calls tools (the built-in offline one does not).
   * @param existing the events of the execution's stream so far.
   * @returns the tool (not offered when there is no agent to call).
   */
  static async load(
    config: SubAgentTools['config'],
    parent: Parent,
    agent: Pick<AgentDoc, 'subAgentIds'>,
    toolUse: boolean,
    existing: readonly LoggedEvent[]
  ): Promise<SubAgentTools> {
    const recorded = new Set<string>();
    for (const e of existing) {
      const d = e.data as { messageType?: string; toolUseId?: string };
      if (e.event === 'message' && (d.messageType === SUBAGENT_STARTED || d.messageType === SUBAGENT_FINISHED))
        recorded.add(`${d.messageType}:${d.toolUseId}`);
    }
    const ids = [...new Set(agent.subAgentIds ?? [])].slice(0, MAX_SUB_AGENTS);
    const agents = new Map<string, AgentDoc>();
    if (toolUse && ids.length > 0) {
      // By `_id`, each (docs/query-shapes.md); the organization and visibility are checked on the rows.
      const found = await Agent.find({ $or: ids.map((_id) => ({ _id })) }).lean<AgentDoc[]>();
      for (const a of found) if (usable(parent, a)) agents.set(a._id, a);
    }
    const listed = ids.filter((id) => agents.has(id));
    const offered: ModelTool[] =
      listed.length === 0
        ? []
        : [
            {
              name: DELEGATE_TOOL,
              description:
                'Hand a task to another agent of your organization and get its final answer. It works on its own ' +
                '(it does not see this conversation): give it everything it needs in `message`. Agents you may ' +
                `call:\n${listed
                  .map((id) => {
                    const a = agents.get(id)!;
                    return `- ${id}: ${a.name} (${a.role})`.slice(0, MAX_AGENT_LINE);
                  })
                  .join('\n')}`,
              inputSchema: {
                type: 'object',
                properties: {
                  agentId: { type: 'string', enum: listed, description: 'The agent to hand the task to' },
                  message: {
                    type: 'string',
                    maxLength: MAX_TASK_CHARS,
                    description: 'The task, with everything the agent needs to do it',
                  },
                },
                required: ['agentId', 'message'],
                additionalProperties: false,
              },
            },
          ];
    return new SubAgentTools(config, parent, agents, recorded, offered);
  }

  /** @returns whether a tool name the model called is this one (only when it was offered). */
  handles(name: string): boolean {
    return name === DELEGATE_TOOL && this.offered.length > 0;
  }

  /**
   * Runs one delegation: starts the child (or finds the one an earlier attempt started), waits for its outcome and
   * answers its reply; a refused call is an error result. Throws only what the activity should retry (the
   * database or Temporal away) and an abort (the parent cancelled, or its worker shutting down).
   * @param client the worker's Temporal client.
   * @param call the call.
   * @param emit writes events into the parent's stream (after the call's `tool_use`, before its `tool_result`).
   * @param signal aborted when the parent stops.
   * @param log for the delegations.
   * @returns the result for the model.
   */
  async run(
    client: Client,
    call: Call,
    emit: (e: Omit<LoggedEvent, 'seq'>) => Promise<unknown>,
    signal: AbortSignal,
    log: Logger
  ): Promise<ToolOutcome> {
    const ids = subAgentIds(this.parent._id, call.id);
    let child = await Execution.findById(ids.executionId).lean<ExecutionDoc>();
    let slot: AdmissionSlot | null | undefined;
    if (!child) {
      const refused = await this.refusal(call);
      if (typeof refused === 'string') return { content: refused, isError: true };
      // The child counts against the process's admission like any execution (lib/executionAdmission.ts).
      slot = admitChild(ids.executionId, this.parent.organizationId);
      if (slot === null) return { content: AT_CAPACITY, isError: true };
      try {
        child = await this.recordChild(refused.agent, refused.message, call.id);
      } catch (err) {
        slot?.release();
        throw err;
      }
    }
    const agentId = child.agentId;
    if (!TERMINAL_EXECUTION_STATUSES.includes(child.status as ExecutionStatus)) {
      try {
        await startExecutionWorkflow(client, this.config.temporalTaskQueue, this.config, child, {
          rejectDuplicate: true,
        });
      } catch (err) {
        // Started already (by an earlier attempt of this call): this one waits for it.
        if (!(err instanceof WorkflowExecutionAlreadyStartedError)) {
          slot?.release();
          throw err;
        }
      }
    }
    await this.emitOnce(emit, SUBAGENT_STARTED, call.id, { executionId: child._id, agentId });
    log.info({ executionId: this.parent._id, childExecutionId: child._id, agentId }, 'sub-agent running');
    const done = await waitForChild(client, child._id, signal);
    const usage = { inputTokens: done.usage?.inputTokens ?? 0, outputTokens: done.usage?.outputTokens ?? 0 };
    // The child's usage joins the parent's (its finish adds `childUsage` up: withChildUsage).
    await Execution.updateOne({ _id: this.parent._id }, { $set: { [`childUsage.${child._id}`]: usage } });
    // And in the parent's record this reply read: a completed reply hands it to its finish, which adds it up
    // without reading the record again (activities/executions.ts `handedOver`).
    this.parent.childUsage = { ...(this.parent.childUsage as Record<string, unknown> | undefined), [child._id]: usage };
    await this.emitOnce(emit, SUBAGENT_FINISHED, call.id, {
      executionId: child._id,
      agentId,
      status: done.status,
      usage: { input_tokens: usage.inputTokens, output_tokens: usage.outputTokens },
    });
    if (done.status === 'completed')
      return { content: capOutput(done.result ?? '', this.config.agentTools.mcpOutputMaxBytes), isError: false };
    if (done.status === 'cancelled') return { content: `The agent ${agentId} was cancelled`, isError: true };
    return {
      content: `The agent ${agentId} failed: ${done.error?.message ?? 'Chat execution failed'}`,
      isError: true,
    };
  }

  /** @returns why a new delegation is refused (for the model), or what it delegates. */
  private async refusal(call: Call): Promise<string | { agent: AgentDoc; message: string }> {
    const { agentId, message } = call.input;
    if (typeof agentId !== 'string' || typeof message !== 'string' || message.trim() === '')
      return 'agentId and message (a non-empty string) are required';
    if (message.length > MAX_TASK_CHARS) return `message is longer than ${MAX_TASK_CHARS} characters`;
    const { subAgentMaxDepth, subAgentMaxPerExecution } = this.config.agentTools;
    const depth = this.parent.depth ?? 0;
    if (depth >= subAgentMaxDepth)
      return (
        `Delegation depth limit reached: this execution is a sub-agent at depth ${depth} and sub-agents may ` +
        `nest ${subAgentMaxDepth} deep. Do the task yourself.`
      );
    if (!this.agents.has(agentId)) return `${agentId} is not one of the agents you may call`;
    // Read again: archived or made private since the execution started.
    const agent = await Agent.findById(agentId).lean<AgentDoc>();
    if (!agent || !usable(this.parent, agent)) return `Agent ${agentId} not found`;
    const started = await Execution.find({
      parentExecutionId: this.parent._id,
      organizationId: this.parent.organizationId,
    })
      .select({ _id: 1, parentToolCallId: 1 })
      .limit(100)
      .lean<Array<Pick<ExecutionDoc, '_id' | 'parentToolCallId'>>>();
    if (started.filter((c) => c.parentToolCallId).length >= subAgentMaxPerExecution)
      return `Sub-agent limit reached: one execution may start ${subAgentMaxPerExecution} sub-agents`;
    return { agent, message };
  }

  /**
   * Writes the child's conversation (a new chat and session in the parent's space, held by the child) and its
   * pending record, each by its derived id (a repeat writes nothing twice).
   */
  private async recordChild(agent: AgentDoc, message: string, toolUseId: string): Promise<ExecutionDoc> {
    const p = this.parent;
    const ids = subAgentIds(p._id, toolUseId);
    const ignoreDuplicate = (err: unknown): void => {
      if (!isDuplicateKey(err)) throw err;
    };
    // The chat holds its session, taken by the child (commands/conversations.ts). A repeat finds it written: by this
    // version, or (across an upgrade) by one before, whose session is a `sessions` document (written again if need be).
    const inserted = await insertDocument(Chat, {
      _id: ids.chatId,
      organizationId: p.organizationId,
      spaceId: p.spaceId,
      agentId: agent._id,
      ownerId: p.userId,
      title: agent.name,
      subtitle: `Sub-agent of execution ${p._id}`,
      ...sessionFields(ids.chatId, { activeExecutionId: ids.executionId, turns: 1 }),
    }).then(
      () => true,
      (err: unknown) => {
        ignoreDuplicate(err);
        return false;
      }
    );
    let onChat = true;
    let sessionId = ids.sessionId;
    if (!inserted) {
      const chat = await Chat.findById(ids.chatId).select({ turns: 1, sessionId: 1 }).lean();
      onChat = chat !== null && holdsSession(chat);
      // Recorded before: its session's id was `ses_sub<suffix>`.
      if (!onChat) sessionId = chat?.sessionId ?? ids.sessionId;
      if (!onChat)
        await insertDocument(Session, {
          _id: sessionId,
          organizationId: p.organizationId,
          chatId: ids.chatId,
          agentId: agent._id,
          activeExecutionId: ids.executionId,
          turns: 1,
        }).catch(ignoreDuplicate);
    }
    const resolved = resolveModel(agent.model, this.config);
    return recordPendingExecution({
      _id: ids.executionId,
      organizationId: p.organizationId,
      agentId: agent._id,
      userId: p.userId,
      chatId: ids.chatId,
      sessionId,
      spaceId: p.spaceId,
      turn: 1,
      ...(onChat ? { sessionOnChat: true } : {}),
      message,
      provider: resolved.provider,
      model: resolved.model,
      modelNote: resolved.note ?? null,
      parentExecutionId: p._id,
      rootExecutionId: p.rootExecutionId,
      parentToolCallId: toolUseId,
      depth: (p.depth ?? 0) + 1,
      taskId: null,
      source: 'subagent',
      requestId: p.requestId ?? null,
      chatSeqBase: 0,
    });
  }

  private async emitOnce(
    emit: (e: Omit<LoggedEvent, 'seq'>) => Promise<unknown>,
    messageType: string,
    toolUseId: string,
    data: Record<string, unknown>
  ): Promise<void> {
    const key = `${messageType}:${toolUseId}`;
    if (this.recorded.has(key)) return;
    await emit({ event: 'message', data: { messageType, toolUseId, ...data } });
    this.recorded.add(key);
  }
}

/** @returns whether the execution may hand a task to the agent: a live agent of its organization its user can see. */
function usable(parent: Pick<Parent, 'organizationId' | 'userId'>, agent: AgentDoc): boolean {
  return agent.organizationId === parent.organizationId && !agent.archived && canSee(parent, agent);
}

/**
 * Waits until the child's workflow has ended (or the parent stops), then reads the child's outcome.
 * @param client a Temporal client.
 * @param childId the child execution.
 * @param signal aborted when the parent stops.
 * @returns the child as recorded once terminal.
 */
async function waitForChild(client: Client, childId: string, signal: AbortSignal): Promise<ExecutionDoc> {
  signal.throwIfAborted();
  let onAbort: (() => void) | undefined;
  const aborted = new Promise<never>((_, reject) => {
    onAbort = () => reject(signal.reason ?? new Error('aborted'));
    signal.addEventListener('abort', onAbort, { once: true });
  });
  try {
    // The workflow's outcome is read back from the record (written before the workflow returns). A workflow that
    // failed (terminated by an operator, say) has ended too; anything else (Temporal away) is retried.
    const ended = client.workflow
      .getHandle(executionWorkflowId(childId))
      .result()
      .then(
        () => undefined,
        (err: unknown) => {
          if (!(err instanceof WorkflowFailedError)) throw err;
        }
      );
    ended.catch(() => undefined); // still pending when the parent stops first
    await Promise.race([ended, aborted]);
  } finally {
    signal.removeEventListener('abort', onAbort!);
  }
  const child = await Execution.findById(childId).lean<ExecutionDoc>();
  if (!child) throw new Error(`Sub-agent execution ${childId} is missing`);
  if (TERMINAL_EXECUTION_STATUSES.includes(child.status as ExecutionStatus)) return child;
  // Its workflow ended without recording an outcome (terminated by an operator, say).
  return { ...child, status: 'failed', error: { message: 'The execution ended without a result', code: 'internal' } };
}
