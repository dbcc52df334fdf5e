/**
 * An agent: name, role and system prompt, plus the client-library record fields. Deleting archives it
 * (`archived: true`); archived agents are never listed, read, updated or executed, and nothing restores them.
 */
import mongoose, { type InferSchemaType } from 'mongoose';
import { newId } from '../lib/ids';

/** Agent visibility values (SPEC "Agent"); meaning in docs/decisions.md. */
export const AGENT_VISIBILITIES = ['private', 'organization', 'public', 'unlisted'] as const;
export type AgentVisibility = (typeof AGENT_VISIBILITIES)[number];
/** Install states of a library agent in an organization. */
export const AGENT_INSTALL_STATES = ['installed', 'uninstalled'] as const;
export type AgentInstallState = (typeof AGENT_INSTALL_STATES)[number];

const schema = new mongoose.Schema(
  {
    _id: { type: String, default: () => newId('agt') },
    organizationId: { type: String, required: true },
    /** Creator. */
    userId: { type: String, required: true },
    ownerId: { type: String, required: true },
    name: { type: String, required: true },
    role: { type: String, default: 'Assistant' },
    systemPrompt: { type: String, required: true },
    visibility: { type: String, enum: AGENT_VISIBILITIES, default: 'organization' },
    model: { type: String, default: null },
    /** Its executions running at once, at most (docs/fairness.md "Concurrency keys"); null: no limit. */
    maxConcurrentExecutions: { type: Number, default: null, min: 1, max: 1000 },
    initialGreeting: { type: String, default: null },
    image: { type: String, default: null },
    color: { type: String, default: null },
    skillIds: { type: [String], default: [] },
    /** MCP server instances whose tools the agent may call (models/McpServer.ts), besides its skills' requiredMCPs. */
    mcpServerIds: { type: [String], default: [] },
    advanced_tools: { type: [String], default: [] },
    /** Agents of its organization it may hand a task to (`delegate_to_agent`, commands/subAgents.ts). */
    subAgentIds: { type: [String], default: [] },
    tags: { type: [String], default: [] },
    /** Space and chat created with the agent (its `chatUrl`). */
    spaceId: { type: String, required: true },
    chatId: { type: String, required: true },
    archived: { type: Boolean, default: false },
    archivedAt: { type: Date, default: null },
    /**
     * Set on an organization's copy of a built-in library agent (commands/agentLibrary.ts): its library id. Such
     * an agent is installed or uninstalled (uninstalled = archived) and never deleted.
     */
    libraryId: { type: String, default: null },
    installState: { type: String, enum: [...AGENT_INSTALL_STATES, null], default: null },
  },
  { timestamps: true, versionKey: false }
);
schema.index({ organizationId: 1, archived: 1, createdAt: -1, _id: -1 });

export type AgentDoc = InferSchemaType<typeof schema> & { _id: string; createdAt: Date; updatedAt: Date };
export const Agent = mongoose.model('Agent', schema, 'agents');
