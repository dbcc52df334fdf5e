/**
 * An MCP server instance [docs/decisions.md "MCP server instances"]: a remote MCP server (streamable HTTP) an
 * organization registers, whose tools its agents may call. Its name is unique in the organization (skills'
 * `requiredMCPs` name it): a unique index on (organizationId, name). The headers sent with every request (an
 * `Authorization`, say) are sealed with AES-256-GCM (lib/crypto.ts) as one JSON object; only their names are kept
 * in clear, and only those are ever returned. Deleting removes the record and detaches it from the agents.
 */
import mongoose, { type InferSchemaType } from 'mongoose';
import { newId } from '../lib/ids';

const schema = new mongoose.Schema(
  {
    _id: { type: String, default: () => newId('mcp') },
    organizationId: { type: String, required: true },
    /** Kebab-case, unique in the organization. */
    name: { type: String, required: true },
    description: { type: String, default: '' },
    /** The server's streamable-HTTP endpoint (https; checked like webhook destinations). */
    url: { type: String, required: true },
    /** `encryptSecret(JSON.stringify(headers))`; null without headers. */
    sealedHeaders: { type: String, default: null },
    /** The headers' names, in the order given (what the record shows). */
    headerNames: { type: [String], default: [] },
    /** Tools of the server agents may call; null: all of them. */
    allowedTools: { type: [String], default: null },
    /** Who registered it. */
    createdBy: { type: String, required: true },
  },
  { timestamps: true, versionKey: false }
);
// GET /api/v1/mcp-servers (docs/query-shapes.md).
schema.index({ organizationId: 1, createdAt: -1, _id: -1 });
// One name per organization; skills' requiredMCPs are resolved by it at execution.
schema.index({ organizationId: 1, name: 1 }, { unique: true });

export type McpServerDoc = InferSchemaType<typeof schema> & {
  _id: string;
  allowedTools: string[] | null;
  createdAt: Date;
  updatedAt: Date;
};
export const McpServer = mongoose.model('McpServer', schema, 'mcp_servers');
