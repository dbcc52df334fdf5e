/**
 * The MCP tools of one execution [docs/decisions.md "MCP server instances"]: the tools of the MCP server
 * instances its agent may use (commands/mcpServers.ts `mcpServersForAgent`), listed when the execution starts and
 * offered to the model beside the built-in tools, each named `<server>__<tool>` (the providers' name rules:
 * `[A-Za-z0-9_-]{1,64}`; a name that does not fit is shortened with a hash). A call goes to its server through the
 * MCP client (lib/mcpClient.ts: destination check, timeout, size cap); its answer, cut at the output cap, is the
 * model's tool result. Nothing of a result is ever read by the service: it is data for the model. A server that
 * cannot be reached, a tool outside the allow-list or a failed call is an error result for the model, never a failed
 * execution. Calls are at most once: a call recorded but not answered when its worker died is not sent again.
 */
import { sha256Hex } from '../lib/crypto';
import type { Config } from '../lib/config';
import { callTool, listTools, type McpEndpoint } from '../lib/mcpClient';
import type { ModelTool } from '../lib/providers';
import type { McpServerDoc } from '../models';
import type { ToolOutcome } from './agentFileTools';
import { endpointOf, mcpClientOptions, mcpServersForAgent } from './mcpServers';

/** Joins a server's name and its tool's name in the name offered to the model. */
export const MCP_NAME_SEPARATOR = '__';
/** Longest tool name both providers accept. */
const MAX_TOOL_NAME = 64;
/** Most MCP tools offered to one execution (the providers take 128 tools; the built-in ones need room). */
export const MAX_MCP_TOOLS = 100;
/** Longest tool description offered (a server's text, cut). */
const MAX_DESCRIPTION = 1000;
/** Largest input schema offered, as JSON; a larger one is offered as any object. */
const MAX_SCHEMA_CHARS = 16_000;

/** Which server and tool a model tool name stands for (recorded with the call and its result). */
export interface McpToolRef {
  serverId: string;
  server: string;
  tool: string;
}

/**
 * The name a server's tool is offered under: `<server>__<tool>` when it fits the providers' rules, else a
 * shortened, cleaned form ending in a hash of both names (the same every time).
 * @param server the server's name (kebab-case).
 * @param tool the tool's name on the server.
 * @returns the model tool name.
 */
export function mcpToolName(server: string, tool: string): string {
  const full = `${server}${MCP_NAME_SEPARATOR}${tool}`;
  if (/^[A-Za-z0-9_-]+$/.test(full) && full.length <= MAX_TOOL_NAME) return full;
  const clean = full.replace(/[^A-Za-z0-9_-]/g, '_');
  const hash = sha256Hex(`${server}\0${tool}`).slice(0, 8);
  return `${clean.slice(0, MAX_TOOL_NAME - hash.length - 1)}_${hash}`;
}

/** @returns whether the server's allow-list lets agents call the tool (no list: every tool). */
export const toolAllowed = (server: Pick<McpServerDoc, 'allowedTools'>, tool: string): boolean =>
  !server.allowedTools || server.allowedTools.includes(tool);

/**
 * Cuts a tool's answer at the output cap (never inside a character) and says so.
 * @param text the answer.
 * @param maxBytes the cap, in UTF-8 bytes.
 * @returns the text the model gets.
 */
export function capOutput(text: string, maxBytes: number): string {
  const bytes = Buffer.from(text, 'utf8');
  if (bytes.length <= maxBytes) return text;
  const head = new TextDecoder('utf-8', { fatal: false }).decode(bytes.subarray(0, maxBytes)).replace(/\uFFFD+$/, '');
  return `${head}\n[truncated: the tool answered ${bytes.length} bytes; the first ${maxBytes} are shown]`;
}

function offeredSchema(schema: Record<string, unknown> | undefined): Record<string, unknown> {
  if (!schema || schema.type !== 'object' || JSON.stringify(schema).length > MAX_SCHEMA_CHARS)
    return { type: 'object', additionalProperties: true };
  // The providers take the schema itself; a `$schema` dialect marker is left out.
  const { $schema: _dialect, ...rest } = schema;
  return rest;
}

interface Loaded {
  ref: McpToolRef;
  endpoint: McpEndpoint;
}

/** The MCP tools of one execution. */
export class AgentMcpTools {
  private constructor(
    private readonly config: Pick<Config, 'webhookAllowPrivate' | 'agentTools' | 'encryptionKey'>,
    /** The tools offered, by model tool name. */
    private readonly tools: Map<string, Loaded>,
    /** Servers whose tools could not be listed: name → why. */
    private readonly unavailable: Map<string, string>,
    /** Tools a server has but its allow-list leaves out: model tool name → its ref. */
    private readonly refused: Map<string, McpToolRef>,
    /** The tools as offered to the model, in order. */
    readonly offered: ModelTool[]
  ) {}

  /** An execution without MCP servers (or on a model without tool use). */
  static none(config: Pick<Config, 'webhookAllowPrivate' | 'agentTools' | 'encryptionKey'>): AgentMcpTools {
    return new AgentMcpTools(config, new Map(), new Map(), new Map(), []);
  }

  /**
   * Lists the tools of every server the agent may use (all at once, each within the MCP time limit).
   * @param config limits, destination rules and the key.
   * @param agent the agent (organization, `mcpServerIds`).
   * @param skills its skills (`requiredMCPs`).
   * @returns the tools; a server that cannot be listed offers none (its calls get an error result).
   */
  static async load(
    config: Pick<Config, 'webhookAllowPrivate' | 'agentTools' | 'encryptionKey'>,
    agent: { organizationId: string; mcpServerIds?: readonly string[] | null },
    skills: ReadonlyArray<{ requiredMCPs?: readonly string[] | null }>
  ): Promise<AgentMcpTools> {
    const servers = await mcpServersForAgent(agent, skills);
    if (servers.length === 0) return AgentMcpTools.none(config);
    const options = mcpClientOptions(config);
    const listed = await Promise.all(
      servers.map(async (server) => {
        let endpoint: McpEndpoint;
        try {
          endpoint = endpointOf(config, server);
        } catch (err) {
          return { server, endpoint: null, result: { ok: false as const, message: (err as Error).message } };
        }
        return { server, endpoint, result: await listTools(endpoint, options) };
      })
    );
    const tools = new Map<string, Loaded>();
    const unavailable = new Map<string, string>();
    const refused = new Map<string, McpToolRef>();
    const offered: ModelTool[] = [];
    for (const { server, endpoint, result } of listed) {
      if (!result.ok || !endpoint) {
        unavailable.set(server.name, result.ok ? 'no endpoint' : result.message);
        continue;
      }
      for (const t of result.tools) {
        const name = mcpToolName(server.name, t.name);
        const ref = { serverId: server._id, server: server.name, tool: t.name };
        if (!toolAllowed(server, t.name)) {
          refused.set(name, ref);
          continue;
        }
        if (tools.has(name) || offered.length >= MAX_MCP_TOOLS) continue;
        tools.set(name, { ref, endpoint });
        offered.push({
          name,
          description: `[Tool "${t.name}" of the MCP server "${server.name}"] ${t.description}`.slice(
            0,
            MAX_DESCRIPTION
          ),
          inputSchema: offeredSchema(t.inputSchema),
        });
      }
    }
    return new AgentMcpTools(config, tools, unavailable, refused, offered);
  }

  /**
   * @param name a tool name the model called.
   * @returns whether it is one of this execution's MCP tools (offered, refused by an allow-list, or of a server
   *   that could not be listed).
   */
  handles(name: string): boolean {
    return this.tools.has(name) || this.refused.has(name) || this.unavailableServer(name) !== undefined;
  }

  /** @returns the server and tool a model tool name stands for, when it is an offered or refused one. */
  describe(name: string): McpToolRef | undefined {
    return this.tools.get(name)?.ref ?? this.refused.get(name);
  }

  private unavailableServer(name: string): string | undefined {
    const i = name.indexOf(MCP_NAME_SEPARATOR);
    return i > 0 && this.unavailable.has(name.slice(0, i)) ? name.slice(0, i) : undefined;
  }

  /**
   * Runs one call: its answer, cut at the output cap, or an error result; never throws.
   * @param name the model tool name.
   * @param input the arguments the model sent.
   * @param interrupted the call was recorded by an attempt whose worker died before its result: it is not sent
   *   again (the server may have acted on it).
   * @param signal aborts the call (the execution was cancelled).
   * @returns the result for the model.
   */
  async run(
    name: string,
    input: Record<string, unknown>,
    interrupted = false,
    signal?: AbortSignal
  ): Promise<ToolOutcome> {
    const loaded = this.tools.get(name);
    if (!loaded) {
      const refused = this.refused.get(name);
      if (refused)
        return { content: `The tool ${refused.tool} of ${refused.server} is not allowed for agents`, isError: true };
      const server = this.unavailableServer(name);
      return {
        content: server
          ? `The MCP server ${server} is unavailable: ${this.unavailable.get(server)}`
          : `Unknown tool ${name}`,
        isError: true,
      };
    }
    if (interrupted)
      return {
        content:
          'This call was interrupted (the service restarted while it ran). Whether it took effect is unknown; it ' +
          'was not sent again.',
        isError: true,
      };
    const out = await callTool(loaded.endpoint, loaded.ref.tool, input, { ...mcpClientOptions(this.config), signal });
    if (!out.ok) return { content: `The MCP server ${loaded.ref.server} failed: ${out.message}`, isError: true };
    return { content: capOutput(out.text, this.config.agentTools.mcpOutputMaxBytes), isError: out.isError };
  }
}
