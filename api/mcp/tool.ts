/**
 * The shape of one tool of the service's MCP endpoint and what its call runs with: what the tool lists
 * (tools.ts, jobTools.ts, missionTools.ts) declare and the endpoint (index.ts) calls.
 */
import type { AuthContext } from '../../commands/tokens';
import type { Schema } from '../../lib/ajv';
import type { Logger } from '../../lib/logger';
import type { ExecutionRouteDeps } from '../deps';

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
  title: string;
  description: string;
  inputSchema: Schema;
  annotations?: { readOnlyHint?: boolean; destructiveHint?: boolean; idempotentHint?: boolean };
  call: (args: Record<string, unknown>, ctx: ToolContext) => Promise<Record<string, unknown>>;
}
