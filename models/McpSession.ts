/**
 * A session of the MCP endpoint (the `Mcp-Session-Id` its initialize answer names). The state lives here, not in an
 * api process's memory, so any api instance serves any request of the session (api/mcp/transport.ts). A session
 * belongs to the organization and user of the token that opened it: a request of the session with another
 * identity's token is answered as an unknown session. `DELETE /mcp` closes it.
 */
import mongoose, { type InferSchemaType } from 'mongoose';
import { newId } from '../lib/ids';

const schema = new mongoose.Schema(
  {
    _id: { type: String, default: () => newId('mcps') },
    organizationId: { type: String, required: true },
    userId: { type: String, required: true },
    /** The OAuth client (`oac_…`) or the service token (`tok_…`) that opened it. */
    clientId: { type: String, required: true },
    /** The protocol version the initialize answer negotiated (later requests' MCP-Protocol-Version must match). */
    protocolVersion: { type: String, required: true },
    clientName: { type: String, default: '' },
    closedAt: { type: Date, default: null },
  },
  { timestamps: true, versionKey: false }
);

export type McpSessionDoc = InferSchemaType<typeof schema> & { _id: string; createdAt: Date };
export const McpSession = mongoose.model('McpSession', schema, 'mcp_sessions');

/**
 * @param sessionId the MCP session.
 * @param streamId the transport's stream (one per POST that carries requests; `get` for the standalone stream).
 * @returns the event-log stream holding that stream's messages (resumable with Last-Event-ID).
 */
export const mcpStreamId = (sessionId: string, streamId: string): string => `mcp:${sessionId}:${streamId}`;
