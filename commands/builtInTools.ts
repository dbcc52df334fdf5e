/**
 * The catalogue of built-in tools [docs/decisions.md "Skills"]: every tool the service itself can offer a model, by
 * name, with what it needs and whether agents get it without asking. A skill's `builtInTools` and an agent's
 * `advanced_tools` name tools of this catalogue (anything else is 400), and {@link enabledTools} is the one answer
 * to "which tools does this execution offer the model". Today: the workspace file tools (commands/agentFileTools.ts),
 * on by default for every agent running in a workspace, as before skills existed. A tool that must be asked for
 * (a sub-agent tool, say) is added here with `byDefault: false`; tools of MCP server instances are not built in and
 * join the offer beside these.
 */
import type { ModelTool } from '../lib/providers';
import { FILE_TOOLS } from './agentFileTools';

/** A tool of the catalogue. */
export interface BuiltInTool {
  /** Its name, description and input schema, as offered to the model. */
  tool: ModelTool;
  /** What an execution must have for the tool to work: `workspace`, the execution's workspace. */
  needs: 'workspace' | null;
  /**
   * Offered to every agent whose execution meets `needs` (true), or only to an agent that asks for it through its
   * `advanced_tools` or one of its skills' `builtInTools` (false).
   */
  byDefault: boolean;
}

/** Every built-in tool, in the order they are offered. */
export const BUILT_IN_TOOLS: readonly BuiltInTool[] = [
  ...FILE_TOOLS.map((tool) => ({ tool, needs: 'workspace' as const, byDefault: true })),
];

/** The names skills and agents may list. */
export const BUILT_IN_TOOL_NAMES: readonly string[] = BUILT_IN_TOOLS.map((t) => t.tool.name);

/** What decides the tools of one execution. */
export interface ToolContext {
  /** The execution's provider can call tools (the offline built-in model calls none). */
  toolUse: boolean;
  /** The execution runs in a workspace. */
  workspace: boolean;
  /** The agent's `advanced_tools`. */
  agent: { advanced_tools?: readonly string[] | null };
  /** The agent's skills (their `builtInTools`). */
  skills: ReadonlyArray<{ builtInTools?: readonly string[] | null }>;
}

/**
 * The built-in tools an execution offers the model: the default ones, plus those its agent or its skills ask for,
 * each only when the execution has what it needs; names outside the catalogue (stored before it was checked) are
 * ignored.
 * @param ctx the provider's tool use, the workspace, the agent and its skills.
 * @returns the tools, in catalogue order (none for a provider without tool use).
 */
export function enabledTools(ctx: ToolContext): ModelTool[] {
  if (!ctx.toolUse) return [];
  const asked = new Set([...(ctx.agent.advanced_tools ?? []), ...ctx.skills.flatMap((s) => s.builtInTools ?? [])]);
  return BUILT_IN_TOOLS.filter(
    (t) => (t.byDefault || asked.has(t.tool.name)) && (t.needs !== 'workspace' || ctx.workspace)
  ).map((t) => t.tool);
}
