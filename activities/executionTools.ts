/**
 * The tools an execution's reply offers its model, and the running of the calls the model makes: the built-in file
 * tools of its workspace (commands/builtInTools.ts, commands/agentFileTools.ts), the tools of its MCP servers
 * (commands/agentMcpTools.ts) and its sub-agents (commands/subAgents.ts). Each call's result is recorded in the
 * execution's stream before the next call runs, so a retried reply never runs a call twice.
 */
import type { Context } from '@temporalio/activity';
import { AgentFileTools, type ToolOutcome } from '../commands/agentFileTools';
import { AgentMcpTools, type McpToolRef } from '../commands/agentMcpTools';
import { enabledTools } from '../commands/builtInTools';
import { SubAgentTools } from '../commands/subAgents';
import type { Config } from '../lib/config';
import type { CoalescingWriter, LoggedEvent } from '../commands/eventLog';
import type { Logger } from '../lib/logger';
import type { ModelTool } from '../lib/providers';
import { traceToolCall } from '../lib/tracing';
import type { AgentDoc, ExecutionDoc, SkillDoc } from '../models';
import { toolResultEvent, type ToolCall } from './executionEvents';

/** What running a round of calls needs from the reply that runs it. */
/**
 * What a reply uses of its activity's context: the activity's own (`Context.current()`), or the one of a reply begun
 * before its local activity by this process's eager start (activities/executionRun.ts), whose attempt is the first.
 */
export type ReplyContext = Pick<Context, 'heartbeat' | 'cancellationSignal' | 'cancellationDetails' | 'client'> & {
  info: Pick<Context['info'], 'attempt' | 'isLocal'>;
};

export interface ToolRun {
  /** The activity's context (its client starts sub-agents). */
  ctx: ReplyContext;
  executionId: string;
  /** Aborted when the reply stops (cancel, idle timeout, deadline). */
  signal: AbortSignal;
  /** The execution's stream writer. */
  writer: CoalescingWriter;
  log: Logger;
}

/** The tools of one reply. */
export class ExecutionTools {
  private constructor(
    /** The built-in file tools (none: the agent runs in no workspace, or its model calls no tools). */
    private readonly files: AgentFileTools | null,
    private readonly mcp: AgentMcpTools,
    private readonly sub: SubAgentTools,
    /** Every tool as offered to the model. */
    readonly offered: ModelTool[],
    /** The most rounds of calls a reply makes (AGENT_TOOLS_MAX_ROUNDS). */
    readonly maxRounds: number
  ) {}

  /**
   * Lists the tools an execution offers (its MCP servers' tools are listed now).
   * @param config limits and keys.
   * @param exec the execution.
   * @param agent its agent.
   * @param skills its skills.
   * @param toolUse whether its model calls tools (the built-in offline one does not).
   * @param existing the events of its stream so far.
   * @returns the tools.
   */
  static async load(
    config: Readonly<Config>,
    exec: ExecutionDoc,
    agent: AgentDoc,
    skills: SkillDoc[],
    toolUse: boolean,
    existing: LoggedEvent[]
  ): Promise<ExecutionTools> {
    // The built-in tools it offers (commands/builtInTools.ts): an agent running in a workspace may list, read and
    // write its files (the built-in model calls no tools).
    const builtIn = enabledTools({ toolUse, workspace: !!exec.spaceId, agent, skills });
    const files =
      builtIn.length > 0 && exec.spaceId
        ? new AgentFileTools(config, { organizationId: exec.organizationId, spaceId: exec.spaceId })
        : null;
    // The tools of the agent's MCP servers join them (commands/agentMcpTools.ts), listed now.
    const mcp = toolUse ? await AgentMcpTools.load(config, agent, skills) : AgentMcpTools.none(config);
    // An agent with sub-agents may hand them tasks (commands/subAgents.ts).
    const sub = await SubAgentTools.load(config, exec, agent, toolUse, existing);
    return new ExecutionTools(
      files,
      mcp,
      sub,
      [...builtIn, ...mcp.offered, ...sub.offered],
      config.agentTools.maxRounds
    );
  }

  /**
   * @param name a tool's name.
   * @returns the MCP server and tool it stands for, recorded with its events (none: not an MCP tool).
   */
  describe(name: string): McpToolRef | undefined {
    return this.mcp.describe(name);
  }

  /**
   * Runs the calls whose result is not recorded yet, recording each result before the next call runs.
   * @param run the reply that runs them.
   * @param calls the round's calls.
   * @param results the results recorded so far (filled in).
   * @param round the round's number (past maxRounds, a call only gets an error result).
   * @param interrupted the calls were recorded by an attempt that died before their results (MCP calls are then
   *   not sent again).
   */
  async runCalls(
    run: ToolRun,
    calls: ToolCall[],
    results: Map<string, ToolOutcome>,
    round: number,
    interrupted = false
  ): Promise<void> {
    const { signal, writer, log } = run;
    const { maxRounds, sub, mcp, files } = this;
    for (const call of calls) {
      if (results.has(call.id)) continue;
      signal.throwIfAborted();
      const out: ToolOutcome = await traceToolCall(call.name, async () =>
        round > maxRounds
          ? { content: `Tool call limit reached (${maxRounds} rounds): answer without tools`, isError: true }
          : sub.handles(call.name)
            ? sub.run(run.ctx.client, call, (e) => writer.append([e]), signal, log)
            : mcp.handles(call.name)
              ? mcp.run(call.name, call.input, interrupted, signal)
              : files
                ? files.run(call.name, call.input)
                : { content: 'No tools are available in this execution', isError: true }
      );
      // A call cut short by a cancel records no result: the reply ends here.
      signal.throwIfAborted();
      await writer.append([toolResultEvent(call, out, mcp.describe(call.name))]);
      results.set(call.id, out);
      log.info({ executionId: run.executionId, tool: call.name, isError: out.isError }, 'tool call');
    }
  }
}
