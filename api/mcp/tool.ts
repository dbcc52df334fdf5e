/**
 * The shape of one tool of the service's MCP endpoint and what its call runs with: what the tool lists
 * (tools.ts, jobTools.ts, missionTools.ts) declare with {@link tool} and the endpoint (index.ts) calls.
 */
import type { AuthContext } from '../../commands/tokens';
import type { Schema } from '../../lib/ajv';
import type { Scope } from '../../models';
import type { Logger } from '../../lib/logger';
import type { ExecutionRouteDeps } from '../deps';
import type { Validated } from '../schemas';

/** What a tool call runs with. */
export interface ToolContext {
  deps: ExecutionRouteDeps;
  auth: AuthContext;
  log: Logger;
  /** Aborted when the client cancels the call (the work itself goes on: only cancel tools stop work). */
  signal: AbortSignal;
  /** Sends a progress notification when the client asked for them (a `progressToken`). */
  progress: (progress: number, message: string) => Promise<void>;
}

export interface McpTool {
  name: string;
  /**
   * The scope the call needs: the one of the matching REST route (a token does through MCP exactly what it could
   * through REST) [docs/decisions.md "MCP tools take the scopes of their REST routes"].
   */
  scope: Scope;
  title: string;
  description: string;
  inputSchema: Schema;
  annotations?: { readOnlyHint?: boolean; destructiveHint?: boolean; idempotentHint?: boolean };
  call: (args: Record<string, unknown>, ctx: ToolContext) => Promise<Record<string, unknown>>;
}

/** A tool whose call reads its arguments as the types its input schema defines. */
export type TypedTool<S> = Omit<McpTool, 'inputSchema' | 'call'> & {
  inputSchema: S;
  call: (args: Validated<S, Record<string, unknown>>, ctx: ToolContext) => Promise<Record<string, unknown>>;
};

/**
 * Declares a tool whose call reads its arguments as the types its input schema defines (like api/route.ts `route`
 * for the HTTP routes): one definition of each tool's input, the schema, and no argument cast beside it.
 * The schema keeps its literal types for this ({@link toolInput}, api/schemas.ts helpers, `as const`).
 * @param spec the declaration; `call` gets `args` typed from `inputSchema`.
 * @returns the tool as the endpoint takes it.
 */
export function tool<const S extends Schema>(spec: TypedTool<S>): McpTool {
  // callTool (tools.ts) checks the arguments against this very schema before the call runs.
  return spec as McpTool;
}

/**
 * A tool's input schema: an object with these properties and no others.
 * @param properties the arguments.
 * @param required names of the arguments that must be present.
 * @returns the schema, with its literal types (the arguments' types are derived from it).
 */
export const toolInput = <const P extends Record<string, Schema>, const R extends keyof P & string = never>(
  properties: P,
  required: readonly R[] = []
) => ({ type: 'object', additionalProperties: false, required, properties }) as const;
